"""Reading the rows after a position, without parsing the bodies nobody asked for.

A projection that keeps up with a growing ledger reads only what was appended since it
last looked (the primary key makes that a range scan), and parses a body only for the
kinds it folds: most of a long run's events are tool-call and agent-step records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from ._event import Event

if TYPE_CHECKING:
    from ._store import Ledger

__all__ = ["Row", "hash_at", "rows_since"]


class Row(NamedTuple):
    """One stored event as its columns; `event()` parses the body (what the hash covers)."""

    seq: int
    kind: str
    ts: str
    prev_hash: str
    hash: str
    body: bytes

    def event(self) -> Event:
        return Event.from_body(self.body, self.hash)


def rows_since(ledger: "Ledger", since: int, until: int | None = None) -> list[Row]:
    """Every row with `since <= seq` (and `seq < until`), in order, read in one statement (one
    snapshot: rows other processes commit meanwhile are in the next call's answer)."""
    if until is None:
        cur = ledger.connection.execute(
            "SELECT seq, kind, ts, prev_hash, hash, body FROM events WHERE seq >= ? ORDER BY seq", (since,))
    else:
        cur = ledger.connection.execute(
            "SELECT seq, kind, ts, prev_hash, hash, body FROM events WHERE seq >= ? AND seq < ? ORDER BY seq",
            (since, until))
    return [Row(*r) for r in cur]


def hash_at(ledger: "Ledger", seq: int) -> str | None:
    """The stored hash of event `seq` (None if there is none)."""
    row = ledger.connection.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
    return None if row is None else str(row[0])
