"""Hash tables queried for a whole array of 64-bit hashes at once.

`WordTable` maps distinct keys to ids by open addressing; `HashTable` holds postings
(a hash may have many entries) sorted by hash, found through a small bitmap and a
`WordTable` over its distinct hashes. Both answer an array of queries with a handful
of array passes and one random memory access per query that passes the bitmap, where
a binary search (`np.searchsorted`) would make about twenty.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["HashTable", "WordTable", "distinct_pairs", "owner_counts"]

_SLOT_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_MAX_FILTER_BITS = 22


@dataclass(frozen=True)
class WordTable:
    """An open-addressing hash table (linear probing, load factor at most 1/4) from
    distinct 64-bit keys to positive ids. Empty slots hold id 0, which is also the
    answer for an absent key."""

    keys: np.ndarray
    ids: np.ndarray  # int32
    shift: int

    @classmethod
    def build(cls, keys: np.ndarray, ids: np.ndarray) -> WordTable:
        keys = np.asarray(keys, dtype=np.uint64)
        ids = np.asarray(ids, dtype=np.int64)
        ordered = np.sort(keys)
        if (ordered[1:] == ordered[:-1]).any():
            raise ValueError("duplicate keys")
        if len(ids) and (ids.min() <= 0 or ids.max() >= 2**31):
            raise ValueError("ids must be positive int32 (0 marks an empty slot)")
        bits = max(4, int(4 * max(len(keys), 1) - 1).bit_length())
        size = 1 << bits
        table_keys = np.zeros(size, dtype=np.uint64)
        table_ids = np.zeros(size, dtype=np.int32)
        slots = ((keys * _SLOT_MULTIPLIER) >> np.uint64(64 - bits)).view(np.intp)
        # Insert all keys at once: each pending key claims its slot if free (one of the
        # keys contending for a slot wins), the rest move one slot on. A slot never
        # empties again, so every key's probe path from its home slot has no gap.
        pending = np.arange(len(keys))
        while len(pending):
            s = slots[pending]
            free = table_ids[s] == 0
            claim, cs = pending[free], s[free]
            table_ids[cs] = ids[claim]
            won = table_ids[cs] == ids[claim]
            table_keys[cs[won]] = keys[claim[won]]
            placed = np.zeros(len(keys), dtype=bool)
            placed[claim[won]] = True
            pending = pending[~placed[pending]]
            slots[pending] = (slots[pending] + 1) & (size - 1)
        return cls(table_keys, table_ids, 64 - bits)

    def slot(self, key: int) -> int:
        """The home slot of one key (where its probe starts)."""
        return ((key * int(_SLOT_MULTIPLIER)) & ((1 << 64) - 1)) >> self.shift

    def lookup(self, query: np.ndarray) -> np.ndarray:
        """The id of every query key (0 where the key is absent), as int64."""
        mask = len(self.keys) - 1
        slot = ((query * _SLOT_MULTIPLIER) >> np.uint64(self.shift)).view(np.intp)
        home = self.ids.take(slot)
        miss = self.keys.take(slot) != query
        # Keys that met another key in their home slot probe on: few, at this load.
        todo = np.flatnonzero(miss & (home != 0))
        out = np.where(miss, 0, home).astype(np.int64, copy=False)
        while len(todo):
            s = (slot[todo] + 1) & mask
            slot[todo] = s
            hit = self.keys.take(s) == query[todo]
            out[todo[hit]] = self.ids.take(s[hit])
            todo = todo[~hit & (self.ids.take(s) != 0)]
        return out


def _bitmap(hashes: np.ndarray, distinct: int) -> np.ndarray:
    """A bitmap of the top bits of the hashes, about 16 slots per distinct hash (a hash not
    in the table passes with probability 1/16 or less) and small enough to stay in cache."""
    bits = min(max((16 * distinct).bit_length(), 10), _MAX_FILTER_BITS)
    bitmap = np.zeros(1 << bits, dtype=bool)
    bitmap[(hashes >> np.uint64(64 - bits)).view(np.intp)] = True
    return bitmap


def _derived(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray, WordTable]:
    """Bitmap, run ends (entry -> index after the last entry with its hash) and the
    table of distinct hashes -> 1 + index of their first entry."""
    n = len(hashes)
    last = np.flatnonzero(np.append(hashes[1:] != hashes[:-1], True)) if n else np.zeros(0, dtype=np.intp)
    first = np.concatenate(([0], last[:-1] + 1)).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    run_end = np.repeat(last + 1, last + 1 - first)
    return _bitmap(hashes, len(first)), run_end, WordTable.build(hashes[first], first + 1)


@dataclass(frozen=True)
class HashTable:
    """Entries `(hash, a, b)` sorted by hash; `a` and `b` are integer payloads."""

    hashes: np.ndarray
    a: np.ndarray
    b: np.ndarray
    bitmap: np.ndarray
    run_end: np.ndarray
    where: WordTable

    @classmethod
    def build(cls, hashes: np.ndarray, a: np.ndarray, b: np.ndarray) -> HashTable:
        order = np.argsort(hashes, kind="stable")
        hashes = np.ascontiguousarray(hashes[order], dtype=np.uint64)
        a, b = np.asarray(a, dtype=np.int64)[order], np.asarray(b, dtype=np.int64)[order]
        return cls(hashes, a, b, *_derived(hashes))

    def __getstate__(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.hashes, self.a, self.b  # the rest is rebuilt on load, in milliseconds

    def __setstate__(self, state: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        hashes, a, b = state
        bitmap, run_end, where = _derived(hashes)
        for name, value in (
            ("hashes", hashes),
            ("a", a),
            ("b", b),
            ("bitmap", bitmap),
            ("run_end", run_end),
            ("where", where),
        ):
            object.__setattr__(self, name, value)

    def __len__(self) -> int:
        return len(self.hashes)

    def find(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The indices of the query hashes present in the table, and the first entry of
        each (which identifies the hash: see `expand` for all its entries)."""
        shift = np.uint64(64 - (len(self.bitmap).bit_length() - 1))
        maybe = np.flatnonzero(self.bitmap.take((query >> shift).view(np.intp)))
        first = self.where.lookup(query[maybe]) - 1
        hit = first >= 0
        return maybe[hit], first[hit]

    def expand(self, first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every entry with the hash of each first entry, as `(index into first, entry)`."""
        counts = self.run_end[first] - first
        total = int(counts.sum())
        if total == len(first):  # one entry per hash, the usual case
            return np.arange(len(first)), first
        offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        return np.repeat(np.arange(len(first)), counts), np.repeat(first, counts) + offsets

    def contains(self, query: np.ndarray) -> np.ndarray:
        """Boolean mask: which query hashes are in the table."""
        out = np.zeros(len(query), dtype=bool)
        out[self.find(query)[0]] = True
        return out

    def lookup(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All matches as `(query index, entry index)` arrays (a query may match many entries)."""
        maybe, first = self.find(query)
        at, entries = self.expand(first)
        return maybe[at], entries


def distinct_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct `(a[i], b[i])` pairs, sorted by `a` then `b` (each in its own dtype's
    order): `np.unique` of the stacked pairs along axis 0, without its sort of row records."""
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    new = np.ones(len(a), dtype=bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[new], b[new]


def owner_counts(values: np.ndarray, owners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and, for each, how many distinct owners hold it."""
    v, _ = distinct_pairs(values, owners)
    starts = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1]))) if len(v) else np.zeros(0, dtype=np.intp)
    return v[starts], np.diff(np.append(starts, len(v)))
