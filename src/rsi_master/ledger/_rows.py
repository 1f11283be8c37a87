"""Reading the rows after a position, without parsing the bodies nobody asked for.

A projection that keeps up with a growing ledger reads only what was appended since it
last looked (the primary key makes that a range scan), and parses a body only for the
kinds it folds: most of a long run's events are tool-call and agent-step records.
"""

from __future__ import annotations

from collections.abc import Collection
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
    body: bytes | None  # None where the caller did not ask for this kind's bodies

    def event(self) -> Event:
        if self.body is None:
            raise ValueError(f"event {self.seq}: its body was not read")
        return Event.from_body(self.body, self.hash)


def rows_since(
    ledger: Ledger, since: int, until: int | None = None, bodies: Collection[str] | None = None
) -> list[Row]:
    """Every row with `since <= seq` (and `seq < until`), in order, read in one statement (one
    snapshot: rows other processes commit meanwhile are in the next call's answer). With
    `bodies`, only rows of those kinds carry their body (the rest are never copied out)."""
    where = "seq >= ?"
    args: list[int | str] = [since]
    if until is not None:
        where += " AND seq < ?"
        args.append(until)
    if bodies is None:
        body = "body"
    else:
        kinds = sorted(bodies)
        body = f"CASE WHEN kind IN ({', '.join('?' * len(kinds))}) THEN body END" if kinds else "NULL"
        args = [*kinds, *args]
    cur = ledger.connection.execute(
        f"SELECT seq, kind, ts, prev_hash, hash, {body} FROM events WHERE {where} ORDER BY seq", args
    )
    return list(map(Row._make, cur))


def hash_at(ledger: Ledger, seq: int) -> str | None:
    """The stored hash of event `seq` (None if there is none)."""
    row = ledger.connection.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
    return None if row is None else str(row[0])
