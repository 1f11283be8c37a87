"""Token hashes and vocabulary keys of normalised bytes (see `_normalise`).

A token's hash is a polynomial hash of its bytes (prefix sums over `powers_of`, so all
tokens of a text hash in one pass), mixed with its length; its key is its bytes
themselves when they fit in 64 bits. `_normalise` cuts the tokens, `_numbers` keys the
number words the same way, and `_hashing` builds shingles from the same powers.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BYTE_VALUE", "LENGTH_MIX", "powers_of", "token_hashes", "token_keys"]

BYTE_VALUE = np.random.default_rng(0xB17E).integers(1, 2**63, size=256, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
_BASE = np.uint64(0x100000001B3)  # odd, so invertible modulo 2^64
_BASE_INVERSE = np.uint64(pow(0x100000001B3, -1, 1 << 64))
LENGTH_MIX = np.uint64(0x9E3779B97F4A7C15)


_POWERS: list[np.ndarray] = [np.ones(1, dtype=np.uint64), np.ones(1, dtype=np.uint64)]


def powers_of(n: int) -> tuple[np.ndarray, np.ndarray]:
    """BASE**i and BASE**-i modulo 2**64 for i <= n, cached and grown by doubling."""
    if len(_POWERS[0]) <= n:
        size = max(n + 1, 2 * len(_POWERS[0]), 1 << 16)
        for k, base in enumerate((_BASE, _BASE_INVERSE)):
            p = np.full(size, base, dtype=np.uint64)
            p[0] = 1
            _POWERS[k] = np.cumprod(p, dtype=np.uint64)
    return _POWERS[0], _POWERS[1]


def token_hashes(c: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """`tokenise`'s hash of the word tokens `c[start:end]` (each at least one byte),
    from their own bytes in one pass: for the few tokens that need it after a `scan`."""
    if not len(starts):
        return np.zeros(0, dtype=np.uint64)
    lengths = ends - starts
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    k = np.arange(int(lengths.sum())) - np.repeat(offsets, lengths)
    powers, _ = powers_of(int(lengths.max()))
    terms = BYTE_VALUE[c[np.repeat(starts, lengths) + k]] * powers[k]
    return np.add.reduceat(terms, offsets) ^ (lengths.astype(np.uint64) * LENGTH_MIX)


_KEY_MASKS = np.asarray([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def token_keys(c: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """A 64-bit key per token `c[start:end]`: its bytes themselves (little-endian, zero
    padded) for tokens of up to 8 bytes, which are nearly all, else its `token_hashes`
    hash. One unaligned 8-byte load per token instead of a hash pass over every byte;
    `scan` uses it for the vocabulary lookup (see `_table.WordTable`)."""
    n = len(c)
    padded = np.zeros(n + 8, dtype=np.uint8)
    padded[:n] = c
    words = np.ndarray((n + 1,), dtype="<u8", buffer=padded, strides=(1,))  # the 8 bytes from each position
    lengths = ends - starts
    keys = words.take(starts)
    keys &= _KEY_MASKS.take(np.minimum(lengths, 8))
    long = np.flatnonzero(lengths > 8)
    if len(long):  # rare: keyed by their hash (random 64 bits, so no clash with the short keys)
        keys[long] = token_hashes(c, starts[long], ends[long])
    return keys
