"""What one `verify_ledger` established, kept in memory so that the next verification of the
same ledger in this process re-checks its old events cheaply and parses only the new ones.

Nothing here is trusted about the database: every verification still reads every row, hashes
every body and compares each hash with its column and with the chain. What the memo spares is
work that is a pure function of bytes it has already seen: a row whose indexed columns equal a
remembered clean row and whose body still hashes to the same hash was parsed and checked
before (same SHA-256, same bytes, same result); the Merkle tree over a run of leading event
hashes that all equal the remembered ones has the remembered roots; a checkpoint row identical
to one whose signature verified under the same key verifies again. A rewritten, inserted,
deleted or rolled-back row changes one of those bytes and is checked in full. The memo lives
only in memory: a verifier in a fresh process (`rsi-master verify`) starts without one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._checkpoint import Checkpoint
from ._merkle import Frontier

__all__ = ["LedgerMemo"]

# (seq, prev_hash, hash, kind, actor_role, actor_id, ts): an event row without its body.
Columns = tuple[object, ...]
# (digest, role, name) of each artifact an event body references.
Refs = tuple[tuple[str, str, str], ...]


@dataclass
class LedgerMemo:
    """One ledger's verified state after `verify_ledger(..., memo=)`; pass the same object to
    the next call. Valid for one (public key, run id, schema version); reset on any other."""

    key: tuple[bytes, str, int] | None = None
    rows: list[Columns] = field(default_factory=list)
    """Each stored row's columns, in order."""
    clean: list[Refs | None] = field(default_factory=list)
    """Per row: the artifact refs of a body that hashed to its hash and parsed with columns
    matching it; None for any other."""
    ok: int = 0
    """Leading rows with no problem at all (seq in order, clean, chained)."""
    ok_refs: set[tuple[int, str, str, str]] = field(default_factory=set)
    """(seq, digest, role, name) of the artifacts the first `ok` rows reference."""
    ok_referenced: dict[str, int] = field(default_factory=dict)
    """Digest -> first of the first `ok` rows that references it."""
    leaves: list[bytes] = field(default_factory=list)
    frontier: Frontier = field(default_factory=Frontier)
    """The tree over all of `leaves`."""
    roots: dict[int, str] = field(default_factory=dict)
    """Tree roots (hex) at the sizes the last verification needed."""
    checkpoints: dict[tuple[object, ...], Checkpoint] = field(default_factory=dict)
    """Checkpoint rows (size, root, body, signature) whose own checks all passed -> the parsed body."""
    consistent: set[tuple[int, str, int, str]] = field(default_factory=set)
    """(size, root, size, root) pairs of checkpoints proven consistent over `leaves`."""
    subtrees: dict[tuple[int, int], bytes] = field(default_factory=dict)
    """Subtree hashes over `leaves` computed for consistency proofs."""

    def frontier_at(self, size: int, leaves: list[bytes]) -> Frontier:
        """The tree of `leaves[:size]`, whose first `size` leaves equal the memo's."""
        if size == len(self.leaves):
            return self.frontier.copy()
        f = Frontier()
        for leaf in leaves[:size]:
            f.append(leaf)
        return f
