"""The ledger: an append-only SQLite table of hash-chained events.

One writer at a time: every write is a `BEGIN IMMEDIATE` transaction, so concurrent
producers (processes or threads with their own `Ledger`) queue on SQLite's write lock
instead of forking the chain. The database itself refuses updates, deletes and inserts
that do not extend the chain (triggers, UNIQUE prev_hash), so even a buggy or hostile
writer using plain SQL cannot rewrite history without first altering the schema, which
`verify` checks.

An agent with file access can still alter the schema, or append rows with a correctly
recomputed chain. What it cannot do is sign: every write transaction also replaces the
*seal* (a signed tree head over every event, version-2 ledgers) in the same transaction,
and the operator key directory's *witness* is moved forward to it after the commit, only
along a verified consistency proof. A writer opens a ledger only when it extends the
witness and the seal covers every event; it never signs rows it has not verified.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._checkpoint import Checkpoint, SignedCheckpoint, event_leaf, write_json_atomic
from ._event import GENESIS_HASH, Event, EventDraft, seal, validate_draft
from ._keys import KeyDir, RunRecord, Signer, check_run_id, public_key_pem, verify_signature
from ._merkle import EMPTY_ROOT, Frontier, consistency_proof, consistency_proof_extending, verify_consistency
from ..errors import LedgerError, MalformedEventError, NotARunError, RsiMasterError

__all__ = ["FORMAT", "SCHEMA", "SCHEMA_VERSION", "Ledger", "schema_for", "utc_now"]

FORMAT = "rsi-master-ledger"
# 1: checkpoints over raw event hashes, no seal (read and verified, never appended to).
# 2: RFC 6962 leaves (checkpoint version 2) and the seal.
SCHEMA_VERSION = "2"
_SUPPORTED = ("1", "2")
_HEX64 = re.compile(r"[0-9a-f]{64}")

_TABLES = ("meta", "events", "artifact_refs", "checkpoints")
SCHEMA_V1 = (
    [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE events (seq INTEGER PRIMARY KEY, prev_hash TEXT NOT NULL UNIQUE,"
        " hash TEXT NOT NULL, kind TEXT NOT NULL, actor_role TEXT NOT NULL,"
        " actor_id TEXT NOT NULL, ts TEXT NOT NULL, body BLOB NOT NULL)",
        # No UNIQUE on hash: equal hashes would need equal bodies, and seq differs; a
        # second random-keyed index halved batched insert speed.
        "CREATE INDEX events_kind ON events (kind, seq)",
        "CREATE INDEX events_actor ON events (actor_role, actor_id, seq)",
        "CREATE TABLE artifact_refs (seq INTEGER NOT NULL, digest TEXT NOT NULL, role TEXT NOT NULL,"
        " name TEXT NOT NULL, PRIMARY KEY (digest, role, seq, name)) WITHOUT ROWID",
        "CREATE INDEX artifact_refs_seq ON artifact_refs (seq)",
        "CREATE TABLE checkpoints (tree_size INTEGER PRIMARY KEY, root TEXT NOT NULL,"
        " body BLOB NOT NULL, signature TEXT NOT NULL)",
        # The chain is enforced by the database, not only by this class: an event must
        # name the hash at seq-1 (a gap leaves nothing to name; seq is the primary key,
        # so nothing is inserted twice or in the middle, and prev_hash is UNIQUE: no forks).
        "CREATE TRIGGER events_chain BEFORE INSERT ON events WHEN"
        f" NEW.prev_hash != coalesce((SELECT hash FROM events WHERE seq = NEW.seq - 1), '{GENESIS_HASH}')"
        " OR NEW.seq < 0"
        " BEGIN SELECT RAISE(ABORT, 'event does not extend the chain'); END",
    ]
    + [
        f"CREATE TRIGGER {t}_no_{op.lower()} BEFORE {op} ON {t}"
        f" BEGIN SELECT RAISE(ABORT, 'ledger is append-only: {op} on {t} refused'); END"
        for t in _TABLES
        for op in ("UPDATE", "DELETE")
    ]
)
SCHEMA = SCHEMA_V1 + [
    # One row, replaced in every write transaction: the signed head of the whole ledger.
    # Rows beyond it were not written by a holder of the key.
    "CREATE TABLE seal (id INTEGER PRIMARY KEY CHECK (id = 0), tree_size INTEGER NOT NULL,"
    " body BLOB NOT NULL, signature TEXT NOT NULL)",
    "CREATE TRIGGER seal_no_delete BEFORE DELETE ON seal"
    " BEGIN SELECT RAISE(ABORT, 'ledger is append-only: DELETE on seal refused'); END",
    "CREATE TRIGGER seal_forward BEFORE UPDATE ON seal WHEN NEW.tree_size < OLD.tree_size OR NEW.id != 0"
    " BEGIN SELECT RAISE(ABORT, 'the seal only moves forward'); END",
]


def schema_for(version: str) -> list[str]:
    return SCHEMA_V1 if version == "1" else SCHEMA


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _connect(path: Path, *, create: bool) -> sqlite3.Connection:
    mode = "rwc" if create else "rw"
    try:
        conn = sqlite3.connect(f"file:{path}?mode={mode}", uri=True, isolation_level=None, timeout=60.0)
        conn.execute("PRAGMA busy_timeout = 60000")
        if create:
            conn.execute("PRAGMA journal_mode = WAL")
        # FULL: a committed event survives power loss, not only a killed process.
        conn.execute("PRAGMA synchronous = FULL")
        # The UNIQUE prev_hash index has random keys: with SQLite's default 2 MB page
        # cache a large ledger misses on nearly every insert (32 MB holds ~300k events).
        conn.execute("PRAGMA cache_size = -32768")
    except sqlite3.DatabaseError as exc:
        raise NotARunError(f"{path}: not a readable ledger database ({exc})") from None
    return conn


class Ledger:
    """Append-only, hash-chained event log with signed Merkle checkpoints."""

    def __init__(self, conn: sqlite3.Connection, path: Path, run_id: str, signer: Signer | None,
                 key_dir: KeyDir | None, checkpoint_every: int, public_pem: str = "",
                 version: int = int(SCHEMA_VERSION)) -> None:
        self._conn = conn
        self.public_pem = public_pem or (public_key_pem(signer.public).decode() if signer else "")
        self.path = path
        self.run_id = run_id
        self.version = version
        self._signer = signer
        self._key_dir = key_dir
        self.checkpoint_every = checkpoint_every
        # What this writer has verified: the tree (its compact range), the last event's
        # hash, and the seal row it last saw or wrote. Never rebuilt from unverified rows.
        self._frontier = Frontier()
        self._tip = GENESIS_HASH
        self._sealed: tuple[tuple[int, bytes, str], str] | None = None  # (seal row, its root)
        self._lock = threading.Lock()
        self._closed = False

    # -- opening -------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path, run_id: str, signer: Signer, key_dir: KeyDir | None = None,
               checkpoint_every: int = 1000) -> "Ledger":
        path = Path(path)
        if path.exists():
            raise LedgerError(f"{path} already exists; refusing to overwrite a ledger")
        if key_dir is None:
            raise LedgerError("a ledger needs the operator key directory (its witness is kept there)")
        try:
            check_run_id(run_id)
        except RsiMasterError as exc:
            raise LedgerError(str(exc)) from None
        now = utc_now()
        key_dir.register(RunRecord(run_id=run_id, key_id=signer.key_id, run_dir=str(path.parent.resolve()),
                                   created=now, seen=now))
        head = SignedCheckpoint.sign(Checkpoint(run_id=run_id, tree_size=0, root=EMPTY_ROOT.hex(), ts=utc_now(),
                                                key_id=signer.key_id), signer)
        # The witness first: a crash before the database exists leaves no run, never a
        # ledger the key directory cannot vouch for.
        write_json_atomic(key_dir.witness_path(run_id), head.model_dump(mode="json"))
        body = head.checkpoint.message()
        conn = _connect(path, create=True)
        conn.execute("BEGIN IMMEDIATE")
        for stmt in SCHEMA:
            conn.execute(stmt)
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
    def open(cls, path: Path, signer: Signer | None = None, key_dir: KeyDir | None = None,
             checkpoint_every: int = 1000, public_pem: str = "") -> "Ledger":
        """Open an existing ledger; without a signer it is read-only.

        With a signer, the ledger must be one the key directory vouches for (see
        `_verify_for_writing`); otherwise this refuses rather than sign it."""
        path = Path(path)
        if not path.is_file():
            raise NotARunError(f"{path}: no ledger database here")
        conn = _connect(path, create=False)
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError:
            conn.close()
            raise NotARunError(f"{path}: a database, but not an RSI-Master ledger") from None
        if meta.get("format") != FORMAT:
            conn.close()
            raise NotARunError(f"{path}: a database, but not an RSI-Master ledger")
        if meta.get("schema") not in _SUPPORTED:
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

    def _refuse(self, why: str) -> LedgerError:
        return LedgerError(f"{self.path}: {why}; refusing to open it for writing")

    def _verify_for_writing(self) -> None:
        """Check the ledger against the key directory before signing anything in it.

        What a writer may legitimately find: events up to the seal (a crashed writer's
        transaction either committed with its seal or not at all) and a witness at or
        behind the seal (the witness is moved after the commit). Anything else (fewer
        events than the witness covers, another root at its size, events the seal does not
        cover) was done by someone without the key, and is refused.
        """
        if self.version != int(SCHEMA_VERSION):
            raise self._refuse(f"a version-{self.version} ledger (written before signed heads); "
                               "it can be verified but not appended to")
        keys, signer = self._key_dir, self._signer
        if keys is None or signer is None:
            raise self._refuse("no operator key directory")
        record = keys.record(self.run_id)
        if record is None:
            raise self._refuse(f"the key directory {keys.path} has no record of run {self.run_id}")
        if record.key_id != signer.key_id:
            raise self._refuse(f"the key directory's record of run {self.run_id} names key {record.key_id}, "
                               f"the run directory's ledger.pub is key {signer.key_id}")
        run_dir = str(self.path.parent.resolve())
        here = keys.record_at(run_dir)
        if here is not None and here.run_id != self.run_id:
            raise self._refuse(f"the key directory has run {here.run_id} at {run_dir}, this ledger is run "
                               f"{self.run_id} (run directory replaced?)")
        # Read before the database: the witness only ever lags it, never leads.
        witness = self._read_witness().checkpoint
        frontier, at_witness = Frontier(), EMPTY_ROOT if witness.tree_size == 0 else None
        tip = GENESIS_HASH
        self._conn.execute("BEGIN")  # one snapshot for the events and the seal
        try:
            for seq, hash_ in self._conn.execute("SELECT seq, hash FROM events ORDER BY seq"):
                if seq != frontier.size:
                    raise self._refuse(f"event {frontier.size} is missing")
                frontier.append(self._leaf(hash_))
                tip = hash_
                if frontier.size == witness.tree_size:
                    at_witness = frontier.root()
            seal_row = self._read_seal()
        finally:
            self._conn.execute("COMMIT")
        if frontier.size < witness.tree_size:
            raise self._refuse(f"rolled back or truncated: the operator's witness covers {witness.tree_size} "
                               f"events, the ledger has {frontier.size}")
        if at_witness is None or at_witness.hex() != witness.root:
            raise self._refuse(f"history differs from the operator's witness at {witness.tree_size} events "
                               "(rewritten)")
        self._check_seal(seal_row, frontier, refuse=True)
        self._frontier, self._tip = frontier, tip
        if record.run_dir != run_dir:  # moved or copied by the operator: remember where it is now
            keys.save_record(record.model_copy(update={"run_dir": run_dir, "seen": utc_now()}))
        if witness.tree_size < frontier.size:  # a writer died between its commit and the witness
            self._publish(self._seal_signed(), frontier)

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

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> sqlite3.Connection:
        return self._conn

    def _leaf(self, hash_hex: str) -> bytes:
        # Lower-case only: "AB" decodes like "ab", and the next event would chain onto the edited text.
        if not isinstance(hash_hex, str) or not _HEX64.fullmatch(hash_hex):
            raise LedgerError(f"{self.path}: an event hash is not lower-case hex (ledger edited); refusing to write")
        return event_leaf(bytes.fromhex(hash_hex), self.version)

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
                events, rows, refs = [], [], []
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
                    raise LedgerError(f"{self.path}: event {saved[0].size - 1} was changed under this writer; "
                                      "refusing to write") from None
                if refs:
                    conn.executemany("INSERT OR IGNORE INTO artifact_refs VALUES (?, ?, ?, ?)", refs)
                for e in events:
                    self._frontier.append(event_leaf(bytes.fromhex(e.hash), self.version))
                head = self._sign_head()
                if size - self._last_checkpoint_size() >= self.checkpoint_every:
                    self._insert_checkpoint(head)
                self._write_seal(head)
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

    def _catch_up(self) -> None:
        """Take in events other writers appended, only as far as the seal vouches for them."""
        row = self._conn.execute("SELECT max(seq) FROM events").fetchone()
        stored = 0 if row[0] is None else row[0] + 1
        if stored < self._frontier.size:
            raise LedgerError(f"{self.path}: the ledger shrank under this writer ({self._frontier.size} events "
                              f"verified, {stored} stored: rolled back); refusing to write")
        rows = self._conn.execute(
            "SELECT seq, hash FROM events WHERE seq >= ? ORDER BY seq", (self._frontier.size,)
        ).fetchall()
        for seq, hash_ in rows:
            if seq != self._frontier.size:
                raise LedgerError(f"{self.path}: ledger has a gap before event {seq}")
            self._frontier.append(self._leaf(hash_))
            self._tip = hash_
        self._check_seal(self._read_seal(), self._frontier)

    def _read_seal(self) -> tuple[int, bytes, str] | None:
        row = self._conn.execute("SELECT tree_size, body, signature FROM seal WHERE id = 0").fetchone()
        return None if row is None else (row[0], bytes(row[1]) if not isinstance(row[1], bytes) else row[1], row[2])

    def _check_seal(self, seal_row: tuple[int, bytes, str] | None, frontier: Frontier, refuse: bool = False) -> None:
        def fail(why: str) -> LedgerError:
            return self._refuse(why) if refuse else LedgerError(f"{self.path}: {why}; refusing to write")

        if seal_row is None:
            raise fail("the ledger has no signed head (seal)")
        if self._sealed is not None and seal_row == self._sealed[0]:
            root = self._sealed[1]  # the row this writer wrote or verified last
        else:
            assert self._signer is not None
            _, body, signature = seal_row
            if not verify_signature(self._signer.public, signature, body):
                raise fail("the signed head (seal) does not verify under this run's key")
            try:
                cp = Checkpoint.model_validate_json(body)
            except ValueError:
                raise fail("the signed head (seal) is not a checkpoint") from None
            if cp.run_id != self.run_id or cp.version != self.version or cp.tree_size != seal_row[0]:
                raise fail("the signed head (seal) belongs to another run or version")
            root = cp.root
        size = seal_row[0]
        if frontier.size > size:
            raise fail(f"events {size}..{frontier.size - 1} are not covered by the signed head: they were "
                       "not written by a holder of this run's key (appended with a recomputed chain?)")
        if frontier.size < size:
            raise fail(f"truncated: the signed head covers {size} events, the ledger has {frontier.size}")
        if frontier.root().hex() != root:
            raise fail(f"the events differ from the signed head at {size} events (rewritten)")
        self._sealed = (seal_row, root)

    def _seal_signed(self) -> SignedCheckpoint:
        assert self._sealed is not None
        _, body, signature = self._sealed[0]
        return SignedCheckpoint(checkpoint=Checkpoint.model_validate_json(body), signature=signature,
                                public_key=self.public_pem)

    def _sign_head(self) -> SignedCheckpoint:
        assert self._signer is not None
        cp = Checkpoint(run_id=self.run_id, tree_size=self._frontier.size, root=self._frontier.root().hex(),
                        ts=utc_now(), key_id=self._signer.key_id, version=self.version)
        return SignedCheckpoint.sign(cp, self._signer)

    def _write_seal(self, head: SignedCheckpoint) -> None:
        body = head.checkpoint.message()
        cur = self._conn.execute("UPDATE seal SET tree_size = ?, body = ?, signature = ? WHERE id = 0",
                                 (head.checkpoint.tree_size, body, head.signature))
        if cur.rowcount != 1:
            raise LedgerError(f"{self.path}: the ledger's seal row is missing (edited); refusing to write")
        self._sealed = ((head.checkpoint.tree_size, body, head.signature), head.checkpoint.root)

    def _last_checkpoint_size(self) -> int:
        row = self._conn.execute("SELECT max(tree_size) FROM checkpoints").fetchone()
        return row[0] if row and row[0] is not None else 0

    def _existing_checkpoint(self, size: int) -> SignedCheckpoint | None:
        row = self._conn.execute("SELECT body, signature FROM checkpoints WHERE tree_size = ?", (size,)).fetchone()
        if row is None:
            return None
        return SignedCheckpoint(checkpoint=Checkpoint.model_validate_json(row[0]), signature=row[1],
                                public_key=self.public_pem)

    def _insert_checkpoint(self, signed: SignedCheckpoint) -> None:
        cp = signed.checkpoint
        self._conn.execute("INSERT INTO checkpoints VALUES (?, ?, ?, ?)",
                           (cp.tree_size, cp.root, cp.message(), signed.signature))

    # -- the operator's witness ---------------------------------------------------------
    def _read_witness(self) -> SignedCheckpoint:
        assert self._key_dir is not None and self._signer is not None
        path = self._key_dir.witness_path(self.run_id)
        if not path.is_file():
            raise self._refuse(f"the operator's witness {path} is missing")
        try:
            witness = SignedCheckpoint.load(path)
        except RsiMasterError as exc:
            raise self._refuse(str(exc)) from None
        cp = witness.checkpoint
        if not verify_signature(self._signer.public, witness.signature, cp.message()):
            raise self._refuse(f"the operator's witness {path} does not verify under this run's key")
        if cp.run_id != self.run_id or cp.version != self.version:
            raise self._refuse(f"the operator's witness {path} belongs to another run or version")
        return witness

    def _publish(self, head: SignedCheckpoint, frontier: Frontier) -> None:
        """Move the witness to `head`, only along a consistency proof from the witness.

        Runs after the commit: a writer killed before it leaves the witness behind the
        seal, which the next writer finds and repairs; never ahead of the database."""
        assert self._key_dir is not None
        new = head.checkpoint
        with self._key_dir.witness_lock(self.run_id):
            old = self._read_witness()
            w = old.checkpoint
            if w.tree_size >= new.tree_size:  # another writer got here first
                if w.tree_size == new.tree_size and w.root != new.root:
                    raise LedgerError(f"{self.path}: the operator's witness at {w.tree_size} events has another "
                                      "root than this writer's head (forked ledger); witness kept")
                return
            rows = self._conn.execute("SELECT hash FROM events WHERE seq >= ? AND seq < ? ORDER BY seq",
                                      (w.tree_size, new.tree_size)).fetchall()
            added = [self._leaf(h) for (h,) in rows]
            compact = old.compact_range()
            if compact is not None and len(added) == new.tree_size - w.tree_size:
                proof = consistency_proof_extending(compact, added)
            else:  # a witness without its range: prove from every event
                every = [self._leaf(h) for (h,) in self._conn.execute(
                    "SELECT hash FROM events WHERE seq < ? ORDER BY seq", (new.tree_size,))]
                proof = consistency_proof(every, w.tree_size, new.tree_size) if len(every) == new.tree_size else []
            if not verify_consistency(w.tree_size, new.tree_size, bytes.fromhex(w.root), bytes.fromhex(new.root),
                                      proof):
                raise LedgerError(f"{self.path}: the ledger does not extend the operator's witness at {w.tree_size} "
                                  "events; witness kept")
            witness = head.model_copy(update={"frontier": tuple(n.hex() for n in frontier.nodes)})
            write_json_atomic(self._key_dir.witness_path(self.run_id), witness.model_dump(mode="json"))

    # -- reading -------------------------------------------------------------------
    def size(self) -> int:
        row = self._conn.execute("SELECT max(seq) FROM events").fetchone()
        return 0 if row[0] is None else row[0] + 1

    def get(self, seq: int) -> Event:
        row = self._conn.execute("SELECT body, hash FROM events WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            raise LedgerError(f"no event {seq} in the ledger")
        return Event.from_body(row[0], row[1])

    def events(self, *, kinds: Iterable[str] = (), role: str | None = None, actor_id: str | None = None,
               since: int = 0, limit: int | None = None) -> Iterator[Event]:
        """Events in order, optionally filtered by kind (exact or `prefix.*`) and actor."""
        where, args = ["seq >= ?"], [since]
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

    def leaf_hashes(self, size: int | None = None) -> list[bytes]:
        """The Merkle leaves (under this ledger's checkpoint version) of the first `size` events."""
        sql = "SELECT hash FROM events ORDER BY seq"
        rows = self._conn.execute(sql + (f" LIMIT {int(size)}" if size is not None else "")).fetchall()
        return [event_leaf(bytes.fromhex(h), self.version) for (h,) in rows]

    def checkpoints(self) -> list[SignedCheckpoint]:
        rows = self._conn.execute("SELECT body, signature FROM checkpoints ORDER BY tree_size").fetchall()
        return [SignedCheckpoint(checkpoint=Checkpoint.model_validate_json(b), signature=s, public_key=self.public_pem)
                for b, s in rows]

    def refs_to(self, digest: str, role: str | None = None) -> list[int]:
        """Sequence numbers of events that reference an artifact (as input/output)."""
        if role is None:
            rows = self._conn.execute("SELECT DISTINCT seq FROM artifact_refs WHERE digest = ? ORDER BY seq", (digest,))
        else:
            rows = self._conn.execute(
                "SELECT DISTINCT seq FROM artifact_refs WHERE digest = ? AND role = ? ORDER BY seq", (digest, role))
        return [r[0] for r in rows]

    def refs_of(self, seq: int) -> list[tuple[str, str, str]]:
        """(digest, role, name) of the artifacts one event references."""
        return self._conn.execute("SELECT digest, role, name FROM artifact_refs WHERE seq = ?", (seq,)).fetchall()

