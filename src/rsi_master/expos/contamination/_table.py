"""A sorted hash table with postings, queried for a whole array of hashes at once."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["HashTable"]

_FILTER_BITS = 22  # 4 M-entry bitmap: most query hashes miss, and a bitmap probe is cheaper than a search


def _bitmap(hashes: np.ndarray) -> np.ndarray:
    bitmap = np.zeros(1 << _FILTER_BITS, dtype=bool)
    bitmap[(hashes & np.uint64((1 << _FILTER_BITS) - 1)).astype(np.intp)] = True
    return bitmap


@dataclass(frozen=True)
class HashTable:
    """Entries `(hash, a, b)` sorted by hash; `a` and `b` are integer payloads."""

    hashes: np.ndarray
    a: np.ndarray
    b: np.ndarray
    bitmap: np.ndarray

    @classmethod
    def build(cls, hashes: np.ndarray, a: np.ndarray, b: np.ndarray) -> HashTable:
        order = np.argsort(hashes, kind="stable")
        hashes = np.ascontiguousarray(hashes[order], dtype=np.uint64)
        return cls(hashes, np.asarray(a, dtype=np.int64)[order], np.asarray(b, dtype=np.int64)[order], _bitmap(hashes))

    def __getstate__(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.hashes, self.a, self.b  # the 4 MB bitmap is rebuilt on load, in milliseconds

    def __setstate__(self, state: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        hashes, a, b = state
        for name, value in (("hashes", hashes), ("a", a), ("b", b), ("bitmap", _bitmap(hashes))):
            object.__setattr__(self, name, value)

    def __len__(self) -> int:
        return len(self.hashes)

    def contains(self, query: np.ndarray) -> np.ndarray:
        """Boolean mask: which query hashes are in the table."""
        out = self.bitmap[(query & np.uint64((1 << _FILTER_BITS) - 1)).astype(np.intp)]
        maybe = np.flatnonzero(out)
        if len(maybe) and len(self.hashes):
            at = np.minimum(np.searchsorted(self.hashes, query[maybe]), len(self.hashes) - 1)
            out[maybe] = self.hashes[at] == query[maybe]
        return out

    def lookup(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All matches as `(query index, entry index)` arrays (a query may match many entries)."""
        maybe = np.flatnonzero(self.bitmap[(query & np.uint64((1 << _FILTER_BITS) - 1)).astype(np.intp)])
        if not len(maybe):
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        q = query[maybe]
        left = np.searchsorted(self.hashes, q, side="left")
        right = np.searchsorted(self.hashes, q, side="right")
        counts = right - left
        total = int(counts.sum())
        if total == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        query_index = np.repeat(maybe, counts)
        offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        return query_index, np.repeat(left, counts) + offsets
