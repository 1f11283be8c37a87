"""MinHash signatures with datasketch's permutation scheme, vectorised over many sets.

datasketch's `MinHash.update_batch` costs about 0.2 ms per set in numpy set-up alone,
which is most of the index build for 10,000 items. This module computes the same
signatures (scheme `affine64`: MurmurHash3 finaliser, then `a*h + b mod 2^64`, the
permutations taken from a datasketch MinHash with the same seed) for all sets in a few
array operations and wraps them as `LeanMinHash` for `MinHashLSH`. A test checks that
the signatures equal datasketch's own.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ._config import ContaminationConfig

__all__ = ["SCHEME", "identity", "lean", "lsh_params", "permutations", "signatures"]

SCHEME = "affine64"
_CHUNK = 1 << 15  # shingles per block: bounds the (shingles x permutations) temporary at 32 MB


def identity(value: int) -> int:
    """Shingles are 64-bit hashes already; datasketch must not hash them again."""
    return value


def _datasketch() -> Any:
    try:
        import datasketch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("near-duplicate detection needs datasketch: pip install 'rsi-master[search]'") from exc
    return datasketch


@lru_cache(maxsize=8)
def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """datasketch's `(a, b)` permutation parameters for this size and seed."""
    mh = _datasketch().MinHash(num_perm=num_perm, seed=seed, hashfunc=identity, scheme=SCHEME)
    a, b = mh.permutations
    return np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64)


def lsh_params(config: ContaminationConfig) -> tuple[int, int]:
    """The (bands, rows) `MinHashLSH` picks for the config's threshold and size: the same
    for every index, and about 7 ms of numerical integration to find."""
    return _lsh_params(config.near_dup_threshold, config.num_perm)


@lru_cache(maxsize=8)
def _lsh_params(threshold: float, num_perm: int) -> tuple[int, int]:
    lsh = _datasketch().MinHashLSH(threshold=threshold, num_perm=num_perm)
    return int(lsh.b), int(lsh.r)


def _fmix64(hv: np.ndarray) -> np.ndarray:
    hv = hv ^ (hv >> np.uint64(33))
    hv = hv * np.uint64(0xFF51AFD7ED558CCD)
    hv = hv ^ (hv >> np.uint64(33))
    hv = hv * np.uint64(0xC4CEB9FE1A85EC53)
    return hv ^ (hv >> np.uint64(33))


def signatures(hashes: np.ndarray, owner: np.ndarray, n_sets: int, config: ContaminationConfig) -> np.ndarray:
    """Signature matrix `(n_sets, num_perm)`: row `i` is the MinHash of `hashes[owner == i]`.

    Sets with no element keep the all-ones (maximum) signature, as an empty datasketch MinHash.
    """
    a, b = permutations(config.num_perm, config.minhash_seed)
    out = np.full((n_sets, config.num_perm), np.iinfo(np.uint64).max, dtype=np.uint64)
    if not len(hashes):
        return out
    order = np.argsort(owner, kind="stable")
    hashes, owner = _fmix64(np.asarray(hashes, dtype=np.uint64)[order]), np.asarray(owner)[order]
    for start in range(0, len(hashes), _CHUNK):
        h = hashes[start : start + _CHUNK, None] * a[None, :] + b[None, :]
        o = owner[start : start + _CHUNK]
        first = np.flatnonzero(np.concatenate(([True], o[1:] != o[:-1])))
        block = np.minimum.reduceat(h, first, axis=0)
        # owners are sorted, so each owner appears once per block (a set may span blocks)
        out[o[first]] = np.minimum(out[o[first]], block)
    return out


def lean(signature: np.ndarray, config: ContaminationConfig) -> Any:
    """A datasketch LeanMinHash holding `signature`."""
    return _datasketch().LeanMinHash(seed=config.minhash_seed, hashvalues=signature, scheme=SCHEME)
