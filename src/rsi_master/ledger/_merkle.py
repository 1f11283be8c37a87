"""RFC 6962 Merkle tree hashing, inclusion and consistency proofs.

The functions here take *already hashed* leaves (`leaf_hash(data)` = SHA-256(0x00 || data)).
Which data a ledger hashes into its leaves depends on its checkpoint version: see
`_checkpoint.event_leaf`. Verification algorithms from RFC 9162 section 2.1.3-2.1.4, so a
checkpoint can be checked by any CT-style verifier.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = [
    "EMPTY_ROOT",
    "Frontier",
    "consistency_proof",
    "consistency_proof_extending",
    "inclusion_proof",
    "leaf_hash",
    "node_hash",
    "root",
    "verify_consistency",
    "verify_inclusion",
]

EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """Largest power of two strictly below n (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def root(leaves: Sequence[bytes]) -> bytes:
    """MTH over already-hashed leaves."""
    frontier = Frontier()
    for leaf in leaves:
        frontier.append(leaf)
    return frontier.root()


class Frontier:
    """The roots of the perfect subtrees that make up a tree of `size` leaves.

    Appending is O(log n) and the root is O(log n), so a writer can keep the tree head
    current without rehashing the whole ledger at every checkpoint.
    """

    def __init__(self) -> None:
        self.size = 0
        self._nodes: list[tuple[int, bytes]] = []  # (height, hash), left to right

    def append(self, leaf: bytes) -> None:
        node, height = leaf, 0
        while self._nodes and self._nodes[-1][0] == height:
            _, left = self._nodes.pop()
            node, height = node_hash(left, node), height + 1
        self._nodes.append((height, node))
        self.size += 1

    def copy(self) -> Frontier:
        f = Frontier()
        f.size, f._nodes = self.size, list(self._nodes)
        return f

    @property
    def nodes(self) -> list[bytes]:
        """The compact range [0, size): roots of its perfect subtrees, largest first."""
        return [h for _, h in self._nodes]

    @classmethod
    def from_nodes(cls, size: int, nodes: Sequence[bytes]) -> Frontier:
        """Rebuild from `nodes` (as `nodes` returns them); ValueError if they cannot be a
        compact range of `size` leaves."""
        heights = [b for b in range(size.bit_length() - 1, -1, -1) if size >> b & 1] if size > 0 else []
        if len(heights) != len(nodes) or any(len(n) != 32 for n in nodes):
            raise ValueError(f"not the compact range of a tree of {size} leaves")
        f = cls()
        f.size = size
        f._nodes = list(zip(heights, nodes))
        return f

    def root(self) -> bytes:
        if not self._nodes:
            return EMPTY_ROOT
        acc = self._nodes[-1][1]
        for _, node in reversed(self._nodes[:-1]):
            acc = node_hash(node, acc)
        return acc


def _subtree(leaves: Sequence[bytes], lo: int, hi: int, cache: dict[tuple[int, int], bytes] | None = None) -> bytes:
    if hi - lo == 1:
        return leaves[lo]
    if cache is not None and (lo, hi) in cache:
        return cache[(lo, hi)]
    k = _split(hi - lo)
    value = node_hash(_subtree(leaves, lo, lo + k, cache), _subtree(leaves, lo + k, hi, cache))
    if cache is not None:
        cache[(lo, hi)] = value
    return value


def inclusion_proof(leaves: Sequence[bytes], index: int, size: int | None = None) -> list[bytes]:
    """Audit path for leaf `index` in the tree of the first `size` leaves (RFC 6962 2.1.1)."""
    n = len(leaves) if size is None else size
    if not 0 <= index < n <= len(leaves):
        raise ValueError(f"no leaf {index} in a tree of {n}")

    def path(m: int, lo: int, hi: int) -> list[bytes]:
        if hi - lo == 1:
            return []
        k = _split(hi - lo)
        if m < k:
            return [*path(m, lo, lo + k), _subtree(leaves, lo + k, hi)]
        return [*path(m - k, lo + k, hi), _subtree(leaves, lo, lo + k)]

    return path(index, 0, n)


def consistency_proof(
    leaves: Sequence[bytes], first: int, second: int | None = None, cache: dict[tuple[int, int], bytes] | None = None
) -> list[bytes]:
    """Proof that the tree of `first` leaves is a prefix of the tree of `second` (RFC 6962 2.1.2).

    Pass the same `cache` dict to several calls over one leaf list to share subtree hashes.
    """
    n = len(leaves) if second is None else second
    if not 0 <= first <= n <= len(leaves):
        raise ValueError(f"no consistency proof from {first} to {n} leaves")
    if first == 0 or first == n:
        return []

    def subproof(m: int, lo: int, hi: int, complete: bool) -> list[bytes]:
        size = hi - lo
        if m == size:
            return [] if complete else [_subtree(leaves, lo, hi, cache)]
        k = _split(size)
        if m <= k:
            return [*subproof(m, lo, lo + k, complete), _subtree(leaves, lo + k, hi, cache)]
        return [*subproof(m - k, lo + k, hi, False), _subtree(leaves, lo, lo + k, cache)]

    return subproof(first, 0, n, True)


class _Extended(Sequence[bytes]):
    """Leaves of a tree known only by the compact range of its first `first` leaves and the
    leaves after them; asking for a leaf hidden inside the range is a bug, not a guess."""

    def __init__(self, first: int, compact: dict[tuple[int, int], bytes], new: Sequence[bytes]) -> None:
        self._first, self._compact, self._new = first, compact, new

    def __len__(self) -> int:
        return self._first + len(self._new)

    def __getitem__(self, i):
        if i >= self._first:
            return self._new[i - self._first]
        return self._compact[(i, i + 1)]  # a leaf that is itself a node of the range


def consistency_proof_extending(old: Frontier, new_leaves: Sequence[bytes]) -> list[bytes]:
    """Consistency proof from the tree `old` summarises to that tree extended by `new_leaves`.

    The nodes of an RFC 6962 consistency proof that lie left of the old size are exactly
    the old tree's compact range, so a witness that stores its range can be extended from
    the events after it alone, in O(new) rather than O(whole ledger).
    """
    compact: dict[tuple[int, int], bytes] = {}
    lo = 0
    for height, node in old._nodes:
        compact[(lo, lo + (1 << height))] = node
        lo += 1 << height
    leaves = _Extended(old.size, compact, new_leaves)
    return consistency_proof(leaves, old.size, len(leaves), dict(compact))


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes], root_: bytes) -> bool:
    """RFC 9162 2.1.3.2."""
    if not 0 <= index < size or len(leaf) != 32 or len(root_) != 32:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if len(p) != 32 or sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root_


def verify_consistency(first: int, second: int, root1: bytes, root2: bytes, proof: Sequence[bytes]) -> bool:
    """RFC 9162 2.1.4.2, plus the degenerate cases (empty first tree, equal sizes)."""
    if not 0 <= first <= second or len(root1) != 32 or len(root2) != 32:
        return False
    if any(len(p) != 32 for p in proof):
        return False
    if first == 0:
        return root1 == EMPTY_ROOT and not proof
    if first == second:
        return root1 == root2 and not proof
    if not proof:
        return False
    path = list(proof)
    if first & (first - 1) == 0:  # a power of two: the old root is itself a node of the path
        path.insert(0, root1)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and fr == root1 and sr == root2
