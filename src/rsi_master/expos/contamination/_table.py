"""A sorted hash table with postings, queried for a whole array of hashes at once."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["HashTable", "WordTable"]

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


_SLOT_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class WordTable:
    """An open-addressing hash table (linear probing) from 64-bit keys to positive ids,
    probed for a whole array of keys at once: a handful of array passes, against a
    binary search's twenty-odd steps per key. Empty slots hold id 0, which is also the
    answer for a key that is absent."""

    keys: np.ndarray
    ids: np.ndarray
    shift: int

    @classmethod
    def build(cls, keys: np.ndarray, ids: np.ndarray) -> WordTable:
        keys = np.asarray(keys, dtype=np.uint64)
        ids = np.asarray(ids, dtype=np.int64)
        if len(np.unique(keys)) != len(keys):
            raise ValueError("duplicate keys")
        if len(ids) and ids.min() <= 0:
            raise ValueError("ids must be positive (0 marks an empty slot)")
        bits = max(4, int(4 * max(len(keys), 1) - 1).bit_length())  # load factor at most 1/4
        size = 1 << bits
        table_keys = np.zeros(size, dtype=np.uint64)
        table_ids = np.zeros(size, dtype=np.int64)
        slots = ((keys * _SLOT_MULTIPLIER) >> np.uint64(64 - bits)).astype(np.intp)
        for key, value, slot in zip(keys.tolist(), ids.tolist(), slots.tolist()):
            while table_ids[slot]:
                slot = (slot + 1) & (size - 1)
            table_keys[slot] = key
            table_ids[slot] = value
        return cls(table_keys, table_ids, 64 - bits)

    def slot(self, key: int) -> int:
        """The home slot of one key (where its probe starts)."""
        return ((key * int(_SLOT_MULTIPLIER)) & ((1 << 64) - 1)) >> self.shift

    def lookup(self, query: np.ndarray) -> np.ndarray:
        """The id of every query key (0 where the key is absent)."""
        mask = len(self.keys) - 1
        slot = ((query * _SLOT_MULTIPLIER) >> np.uint64(self.shift)).astype(np.intp)
        found = self.keys.take(slot)
        out = self.ids.take(slot)
        miss = found != query
        # Keys that met another key in their slot probe on; few, at this load.
        todo = np.flatnonzero(miss & (out != 0))
        out[miss] = 0
        while len(todo):
            s = (slot[todo] + 1) & mask
            slot[todo] = s
            hit = self.keys.take(s) == query[todo]
            out[todo[hit]] = self.ids.take(s[hit])
            todo = todo[~hit & (self.ids.take(s) != 0)]
        return out
