"""The ledger: an append-only SQLite table of hash-chained events.

One writer at a time: every write is a `BEGIN IMMEDIATE` transaction, so concurrent
producers (processes or threads with their own `Ledger`) queue on SQLite's write lock
instead of forking the chain. The database itself refuses updates, deletes and inserts
that do not extend the chain (`_schema`), so even a buggy or hostile writer using plain
SQL cannot rewrite history without first altering the schema, which `verify` checks.

An agent with file access can still alter the schema, or append rows with a correctly
recomputed chain. What it cannot do is sign: every write transaction also replaces the
*seal* (a signed tree head over every event, version-2 ledgers) in the same transaction,
and the operator key directory's *witness* is moved forward to it after the commit, only
along a verified consistency proof (`_sealing`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import LedgerError, MalformedEventError, NotARunError, RsiMasterError
from ._checkpoint import Checkpoint, SignedCheckpoint, event_leaf, write_json_atomic
from ._event import GENESIS_HASH, Event, EventDraft, seal, validate_draft
from ._keys import KeyDir, RunRecord, Signer, check_run_id, public_key_pem
from ._merkle import EMPTY_ROOT, Frontier
from ._pg import PgConnection
from ._schema import FORMAT, SCHEMA, SCHEMA_VERSION, SUPPORTED_SCHEMAS, connect, utc_now, wall_utc
from ._sealing import SealKeeper

__all__ = ["Ledger"]


class Ledger(SealKeeper):
    """Append-only, hash-chained event log with signed Merkle checkpoints."""

    def __init__(
        self,
        conn: sqlite3.Connection | PgConnection,
        path: Path,
        run_id: str,
        signer: Signer | None,
        key_dir: KeyDir | None,
        checkpoint_every: int,
        public_pem: str = "",
        version: int = int(SCHEMA_VERSION),
    ) -> None:
        self._conn = conn
        self._signer_pem = public_key_pem(signer.public).decode() if signer else ""
        self.public_pem = public_pem or self._signer_pem
        self.path = path
        self.run_id = run_id
        self.version = version
        self._signer = signer
        self._key_dir = key_dir
        self.checkpoint_every = checkpoint_every
        self._frontier = Frontier()
        self._tip = GENESIS_HASH
        self._sealed = None
        self._witness = None
        self._witness_path = None
        self._lock = threading.Lock()
        self._closed = False

    # -- opening -------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: Path,
        run_id: str,
        signer: Signer,
        key_dir: KeyDir | None = None,
        checkpoint_every: int = 1000,
        *,
        url: str | None = None,
    ) -> Ledger:
        """A new ledger at `path` (SQLite), or, with a PostgreSQL `url`, in that database under
        the run's id (`path` then names the run directory's pointer to it, for messages)."""
        path = Path(path)
        if path.exists():
            raise LedgerError(f"{path} already exists; refusing to overwrite a ledger")
        if key_dir is None:
            raise LedgerError("a ledger needs the operator key directory (its witness is kept there)")
        try:
            check_run_id(run_id)
        except RsiMasterError as exc:
            raise LedgerError(str(exc)) from None
        now = wall_utc()  # the key directory's bookkeeping is real time, a simulated run's too
        key_dir.register(
            RunRecord(run_id=run_id, key_id=signer.key_id, run_dir=str(path.parent.resolve()), created=now, seen=now)
        )
        head = SignedCheckpoint.sign(
            Checkpoint(run_id=run_id, tree_size=0, root=EMPTY_ROOT.hex(), ts=utc_now(), key_id=signer.key_id), signer
        )
        # The witness first: a crash before the database exists leaves no run, never a
        # ledger the key directory cannot vouch for.
        write_json_atomic(key_dir.witness_path(run_id), head.model_dump(mode="json"))
        body = head.checkpoint.message()
        conn: sqlite3.Connection | PgConnection
        if url is None:
            conn = connect(path, create=True)
            conn.execute("BEGIN IMMEDIATE")
            for stmt in SCHEMA:
                conn.execute(stmt)
        else:
            conn = PgConnection.create(url, run_id)
            conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [("format", FORMAT), ("schema", SCHEMA_VERSION), ("run_id", run_id), ("created", utc_now())],
        )
        conn.execute("INSERT INTO checkpoints VALUES (0, ?, ?, ?)", (head.checkpoint.root, body, head.signature))
        conn.execute("INSERT INTO seal VALUES (0, 0, ?, ?)", (body, head.signature))
        conn.execute("COMMIT")
        ledger = cls(conn, path, run_id, signer, key_dir, checkpoint_every)
        ledger._sealed = ((0, body, head.signature), head.checkpoint.root)
        return ledger

    @classmethod
    def open(
        cls,
        path: Path,
        signer: Signer | None = None,
        key_dir: KeyDir | None = None,
        checkpoint_every: int = 1000,
        public_pem: str = "",
        *,
        url: str | None = None,
        run_id: str | None = None,
    ) -> Ledger:
        """Open an existing ledger (SQLite at `path`, or run `run_id` in the PostgreSQL database
        at `url`); without a signer it is read-only.

        With a signer, the ledger must be one the key directory vouches for (see
        `_verify_for_writing`); otherwise this refuses rather than sign it."""
        path = Path(path)
        conn: sqlite3.Connection | PgConnection
        if url is not None:
            conn = PgConnection.open(url, check_run_id(run_id or ""))
        elif not path.is_file():
            raise NotARunError(f"{path}: no ledger database here")
        else:
            conn = connect(path, create=False)
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError:
            conn.close()
            raise NotARunError(f"{path}: a database, but not an RSI-Master ledger") from None
        if meta.get("format") != FORMAT or (run_id is not None and meta.get("run_id") != run_id):
            conn.close()
            raise NotARunError(f"{path}: a database, but not an RSI-Master ledger")
        if meta.get("schema") not in SUPPORTED_SCHEMAS:
            conn.close()
            raise NotARunError(f"{path}: ledger schema {meta.get('schema')} is not supported (want {SCHEMA_VERSION})")
        try:
            check_run_id(meta.get("run_id"))  # type: ignore[arg-type]
        except RsiMasterError as exc:
            conn.close()
            raise NotARunError(f"{path}: {exc}") from None
        ledger = cls(conn, path, meta["run_id"], signer, key_dir, checkpoint_every, public_pem, int(meta["schema"]))
        if signer is not None:
            try:
                ledger._verify_for_writing()
            except BaseException:
                conn.close()
                raise
        return ledger

    def close(self) -> None:
        """Sign a checkpoint over events not yet covered by one, then close (idempotent)."""
        if self._closed:
            return
        try:
            if self._signer is not None and self.size() > self._last_checkpoint_size():
                self.checkpoint()
        finally:
            self._conn.close()
            self._closed = True

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> sqlite3.Connection | PgConnection:
        return self._conn

    # -- writing -------------------------------------------------------------------
    def append(self, draft: EventDraft | dict[str, Any]) -> Event:
        return self.append_many([draft])[0]

    def append_many(self, drafts: Iterable[EventDraft | dict[str, Any]]) -> list[Event]:
        """Append events in one transaction: all are written or none."""
        checked = [validate_draft(d) for d in drafts]
        if self._signer is None:
            raise LedgerError("ledger opened read-only (no signing key)")
        if not checked:
            return []
        with self._lock:
            conn = self._conn
            saved = (self._frontier.copy(), self._tip, self._sealed)
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._catch_up()
                size = self._frontier.size
                prev = self._tip
                ts = utc_now()
                events: list[Event] = []
                rows: list[tuple[Any, ...]] = []
                refs: list[tuple[int, str, str, str]] = []
                for draft in checked:
                    try:
                        event, body = seal(draft, seq=size, ts=ts, prev_hash=prev)
                    except ValueError as exc:
                        raise MalformedEventError(f"malformed event: {exc}") from None
                    events.append(event)
                    rows.append((size, prev, event.hash, event.kind, event.actor.role, event.actor.id, ts, body))
                    refs.extend((size, r.digest, r.role, r.name) for r in event.artifacts)
                    prev, size = event.hash, size + 1
                try:
                    conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
                except sqlite3.IntegrityError:
                    # Our prev_hash is the hash we verified; the database's tip differs.
                    raise LedgerError(
                        f"{self.path}: event {saved[0].size - 1} was changed under this writer; refusing to write"
                    ) from None
                if refs:
                    conn.executemany("INSERT OR IGNORE INTO artifact_refs VALUES (?, ?, ?, ?)", refs)
                for e in events:
                    self._frontier.append(event_leaf(bytes.fromhex(e.hash), self.version))
                head, body = self._sign_head()
                if size - self._last_checkpoint_size() >= self.checkpoint_every:
                    self._insert_checkpoint(head, body)
                self._write_seal(head, body)
                conn.execute("COMMIT")
                self._tip = prev
            except BaseException:
                conn.execute("ROLLBACK")
                self._frontier, self._tip, self._sealed = saved
                raise
            self._publish(head, self._frontier)
        return events

    def checkpoint(self) -> SignedCheckpoint:
        """Keep a signed checkpoint of the current tree head (also done every
        `checkpoint_every` events and on close) and move the witness to it."""
        if self._signer is None:
            raise LedgerError("ledger opened read-only (no signing key)")
        with self._lock:
            saved = (self._frontier.copy(), self._tip, self._sealed)
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._catch_up()
                signed = self._existing_checkpoint(self._frontier.size)
                if signed is None:
                    signed = self._seal_signed()  # the seal covers exactly these events
                    self._insert_checkpoint(signed)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                self._frontier, self._tip, self._sealed = saved
                raise
            self._publish(self._seal_signed(), self._frontier)
        return signed

    def vouch(self) -> int:
        """Check, as a writer, that every stored event is covered by the signed head, and return
        how many are. A reader that decides from the ledger (the harness's selection) calls it
        first: rows appended without the key (a forged record with a recomputed chain) or a
        rolled-back ledger raise LedgerError instead of being read as evidence."""
        if self._signer is None:
            raise LedgerError(f"{self.path}: opened read-only; only a writer can vouch for its events")
        self._conn.execute("BEGIN")
        try:
            self._catch_up()
        finally:
            self._conn.execute("COMMIT")
        return self._frontier.size

    def _last_checkpoint_size(self) -> int:
        row = self._conn.execute("SELECT max(tree_size) FROM checkpoints").fetchone()
        return row[0] if row and row[0] is not None else 0

    def _existing_checkpoint(self, size: int) -> SignedCheckpoint | None:
        row = self._conn.execute("SELECT body, signature FROM checkpoints WHERE tree_size = ?", (size,)).fetchone()
        if row is None:
            return None
        return SignedCheckpoint(
            checkpoint=Checkpoint.model_validate_json(row[0]), signature=row[1], public_key=self.public_pem
        )

    def _insert_checkpoint(self, signed: SignedCheckpoint, body: bytes | None = None) -> None:
        cp = signed.checkpoint
        self._conn.execute(
            "INSERT INTO checkpoints VALUES (?, ?, ?, ?)",
            (cp.tree_size, cp.root, cp.message() if body is None else body, signed.signature),
        )

    # -- reading -------------------------------------------------------------------
    def size(self) -> int:
        row = self._conn.execute("SELECT max(seq) FROM events").fetchone()
        return 0 if row[0] is None else row[0] + 1

    def bytes_by_capability(
        self, *, since: int = 0, until: int | None = None, cap: str | None = None
    ) -> dict[str, int]:
        """Stored body bytes of the events with `since <= seq < until`, summed per capability id
        of their actor (events without one are left out); only `cap`'s when given. One query."""
        sql = (
            "SELECT c, sum(length(body)) FROM (SELECT json_extract(CAST(body AS TEXT), '$.actor.cap') AS c, body"
            " FROM events WHERE seq >= ? AND seq < ?) AS q WHERE c IS NOT NULL"
        )
        args: list[int | str] = [since, 2**62 if until is None else until]
        if cap is not None:
            sql += " AND c = ?"
            args.append(cap)
        return {c: int(n) for c, n in self._conn.execute(sql + " GROUP BY c", args)}

    def get(self, seq: int) -> Event:
        row = self._conn.execute("SELECT body, hash FROM events WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            raise LedgerError(f"no event {seq} in the ledger")
        return Event.from_body(row[0], row[1])

    def events(
        self,
        *,
        kinds: Iterable[str] = (),
        role: str | None = None,
        actor_id: str | None = None,
        since: int = 0,
        limit: int | None = None,
    ) -> Iterator[Event]:
        """Events in order, optionally filtered by kind (exact or `prefix.*`) and actor."""
        where: list[str] = ["seq >= ?"]
        args: list[int | str] = [since]
        kind_terms = []
        for k in kinds:
            if k.endswith(".*"):
                kind_terms.append("kind LIKE ?")
                args.append(k[:-2] + ".%")
            else:
                kind_terms.append("kind = ?")
                args.append(k)
        if kind_terms:
            where.append("(" + " OR ".join(kind_terms) + ")")
        if role is not None:
            where.append("actor_role = ?")
            args.append(role)
        if actor_id is not None:
            where.append("actor_id = ?")
            args.append(actor_id)
        sql = f"SELECT body, hash FROM events WHERE {' AND '.join(where)} ORDER BY seq"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        for body, hash_ in self._conn.execute(sql, args):
            yield Event.from_body(body, hash_)

    def checkpoints(self) -> list[SignedCheckpoint]:
        rows = self._conn.execute("SELECT body, signature FROM checkpoints ORDER BY tree_size").fetchall()
        return [
            SignedCheckpoint(checkpoint=Checkpoint.model_validate_json(b), signature=s, public_key=self.public_pem)
            for b, s in rows
        ]
