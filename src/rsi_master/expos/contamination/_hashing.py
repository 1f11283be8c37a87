"""Vectorised rolling hashes of word-id sequences (numpy, uint64 arithmetic).

Words become small integer ids through the index vocabulary; each id maps to a random
64-bit value and a window of `n` ids hashes to a polynomial in those values. Numpy
does this for every position of a batch in `n` array passes, which is how the check
hashes millions of n-grams per second without a Python loop per word. Collisions only
cost time: every hit is verified against the actual word ids before it is reported.
"""

from __future__ import annotations

import numpy as np

from ._keys import powers_of

__all__ = [
    "UNKNOWN",
    "clause_shingles",
    "direct_span_hashes",
    "id_values",
    "prefix_sums",
    "span_hashes",
    "window_hashes",
    "window_ok",
]

UNKNOWN = 0  # id of any word absent from every protected text: no window with it can match
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_LENGTH_SALT = 0xC2B2AE3D27D4EB4F
_MASK = (1 << 64) - 1


def _salt(n: int) -> np.uint64:
    """Per-length salt, so that windows of different lengths never share a hash by construction."""
    return np.uint64((_LENGTH_SALT * n) & _MASK)


def id_values(vocab_size: int, seed: int = 0x5EED) -> np.ndarray:
    """Random 64-bit value per word id (deterministic, so digests and pickles agree)."""
    return np.random.default_rng(seed).integers(0, 2**63, size=vocab_size, dtype=np.uint64) * np.uint64(2) + np.uint64(
        1
    )


def _raw_windows(values: np.ndarray, n: int) -> np.ndarray:
    """sum(values[i + j] * M**(n - 1 - j), j < n) for every window start i, by doubling:
    a window of n is a window of h = n // 2 shifted by M**(n - h) plus the window of
    n - h after it, so about log2(n) array passes instead of n."""
    if n == 1:
        return values
    h = n // 2
    left = _raw_windows(values, h)
    right = left if n - h == h else _raw_windows(values, n - h)
    count = len(values) - n + 1
    return left[:count] * np.uint64(pow(int(_MULTIPLIER), n - h, 1 << 64)) + right[h : h + count]


def window_hashes(values: np.ndarray, n: int) -> np.ndarray:
    """Hash of every window of `n` consecutive entries of `values` (len(values) - n + 1 of them):
    (((v0 * M + v1) * M + v2) ... ) XOR a salt for the length."""
    count = len(values) - n + 1
    if count <= 0:
        return np.zeros(0, dtype=np.uint64)
    return _raw_windows(values, n) ^ _salt(n)


def window_ok(bad: np.ndarray, n: int) -> np.ndarray:
    """True for windows of `n` entries that contain no `bad` entry."""
    count = len(bad) - n + 1
    if count <= 0:
        return np.zeros(0, dtype=bool)
    hit = bad[:count].copy()
    for k in range(1, n):  # n boolean passes: cheaper than a 64-bit cumulative sum
        hit |= bad[k : k + count]
    return ~hit


def clause_shingles(
    values: np.ndarray, clause: np.ndarray, bad: np.ndarray, sizes: tuple[int, ...], ends: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Shingle hashes, start and end positions (None unless `ends`), for every size `k` in
    `sizes`: every `k` words inside one clause, and every clause shorter than `k` as one
    whole shingle. Windows with a `bad` word are dropped. `clause` numbers the clauses
    in order (non-decreasing).

    Shingles never cross a clause boundary, so the set is the same whatever order the
    clauses come in: that is what lets MinHash see a copy with reordered sentences.
    Several sizes together suit items of different grain: 3-word shingles separate
    short word problems, 4-word shingles separate digit lists.
    """
    hashes: list[np.ndarray] = [np.zeros(0, dtype=np.uint64)]
    starts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    lengths: list[int] = [0]
    counts: list[int] = [0]
    n = len(values)
    if n:
        opens = np.empty(n, dtype=bool)  # a clause starts here
        opens[0] = True
        np.not_equal(clause[1:], clause[:-1], out=opens[1:])
        first = np.flatnonzero(opens)
        clause_lengths = np.diff(np.append(first, n))
        # Rolling state shared by all sizes: window hashes of length k (before the
        # salt), and whether a window holds a bad word or a clause start after its first.
        stop = bad | opens
        raw = {1: values}
        blocked = {1: bad}
        for k in range(2, max(sizes) + 1):
            count = n - k + 1
            if count <= 0:
                break
            raw[k] = raw[k - 1][:count] * _MULTIPLIER + values[k - 1 :]
            blocked[k] = blocked[k - 1][:count] | stop[k - 1 :]
        short: dict[int, np.ndarray] = {}
        for k in sizes:
            if k in raw:
                pos = np.flatnonzero(~blocked[k])
                hashes.append(raw[k][pos] ^ _salt(k))
                starts.append(pos)
                lengths.append(k)
                counts.append(len(pos))
            for length in range(1, k):  # whole clauses shorter than k, without a bad word
                if length not in short:
                    sel = first[clause_lengths == length]
                    keep = ~bad[sel]
                    for j in range(1, length):
                        keep &= ~bad[sel + j]
                    short[length] = sel[keep]
                sel = short[length]
                if len(sel):
                    hashes.append(raw[length][sel] ^ _salt(length))
                    starts.append(sel)
                    lengths.append(length)
                    counts.append(len(sel))
    start = np.concatenate(starts)
    end = start + np.repeat(np.asarray(lengths, dtype=np.int64), counts) if ends else None
    return np.concatenate(hashes), start, end


def prefix_sums(values: np.ndarray) -> np.ndarray:
    """S with S[i] = sum(values[j] * B**j, j < i) mod 2**64, for O(1) hashes of any window."""
    powers, _ = powers_of(len(values))
    out = np.empty(len(values) + 1, dtype=np.uint64)
    out[0] = 0
    np.cumsum(values * powers[: len(values)], out=out[1:])
    return out


def direct_span_hashes(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """`span_hashes` of a few spans (all lengths >= 1) without prefix sums over all of
    `values`: sum(values[start + k] * B**k) for each span."""
    if not len(starts):
        return np.zeros(0, dtype=np.uint64)
    powers, _ = powers_of(int(lengths.max()))
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    k = np.arange(int(lengths.sum())) - np.repeat(offsets, lengths)
    terms = values[np.repeat(starts, lengths) + k] * powers[k]
    return np.add.reduceat(terms, offsets)


def span_hashes(prefix: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Hash of values[start:start+length] for each pair (same value as for the span alone)."""
    _, inverse = powers_of(len(prefix))
    return (prefix[starts + lengths] - prefix[starts]) * inverse[starts]
