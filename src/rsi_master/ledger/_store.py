"""The ledger: an append-only SQLite table of hash-chained events.

One writer at a time: every write is a `BEGIN IMMEDIATE` transaction, so concurrent
producers (processes or threads with their own `Ledger`) queue on SQLite's write lock
instead of forking the chain. The database itself refuses updates, deletes and inserts
that do not extend the chain (triggers, UNIQUE prev_hash), so even a buggy or hostile
writer using plain SQL cannot rewrite history without first altering the schema, which
`verify` checks.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._checkpoint import Checkpoint, SignedCheckpoint, write_json_atomic
from ._event import GENESIS_HASH, Event, EventDraft, seal, validate_draft
from ._keys import KeyDir, Signer, public_key_pem
from ._merkle import Frontier
from ..errors import LedgerError, MalformedEventError, NotARunError

__all__ = ["FORMAT", "SCHEMA", "Ledger", "utc_now"]

FORMAT = "rsi-master-ledger"
SCHEMA_VERSION = "1"

_TABLES = ("meta", "events", "artifact_refs", "checkpoints")
SCHEMA = (
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
                 key_dir: KeyDir | None, checkpoint_every: int, public_pem: str = "") -> None:
        self._conn = conn
        self.public_pem = public_pem or (public_key_pem(signer.public).decode() if signer else "")
        self.path = path
        self.run_id = run_id
        self._signer = signer
        self._key_dir = key_dir
        self.checkpoint_every = checkpoint_every
        self._frontier = Frontier()
        self._lock = threading.Lock()
        self._closed = False

    # -- opening -------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path, run_id: str, signer: Signer, key_dir: KeyDir | None = None,
               checkpoint_every: int = 1000) -> "Ledger":
        path = Path(path)
        if path.exists():
            raise LedgerError(f"{path} already exists; refusing to overwrite a ledger")
        conn = _connect(path, create=True)
        conn.execute("BEGIN IMMEDIATE")
        for stmt in SCHEMA:
            conn.execute(stmt)
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [("format", FORMAT), ("schema", SCHEMA_VERSION), ("run_id", run_id), ("created", utc_now())],
        )
        conn.execute("COMMIT")
        return cls(conn, path, run_id, signer, key_dir, checkpoint_every)

    @classmethod
    def open(cls, path: Path, signer: Signer | None = None, key_dir: KeyDir | None = None,
             checkpoint_every: int = 1000, public_pem: str = "") -> "Ledger":
        """Open an existing ledger; without a signer it is read-only."""
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
        if meta.get("schema") != SCHEMA_VERSION:
            conn.close()
            raise NotARunError(f"{path}: ledger schema {meta.get('schema')} is not supported (want {SCHEMA_VERSION})")
        return cls(conn, path, meta["run_id"], signer, key_dir, checkpoint_every, public_pem)

    def close(self) -> None:
        """Sign any events not yet covered by a checkpoint, then close (idempotent)."""
        if self._closed:
            return
        if self._signer is not None and self.size() > self._last_checkpoint_size():
            self.checkpoint()
        self._conn.close()
        self._closed = True

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> sqlite3.Connection:
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
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._catch_up()
                size = self._frontier.size
                prev = self._tip_hash(size)
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
                conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
                if refs:
                    conn.executemany("INSERT OR IGNORE INTO artifact_refs VALUES (?, ?, ?, ?)", refs)
                for e in events:
                    self._frontier.append(bytes.fromhex(e.hash))
                signed = None
                if size - self._last_checkpoint_size() >= self.checkpoint_every:
                    signed = self._write_checkpoint()
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                self._frontier = Frontier()  # rebuilt from the database on the next write
                raise
        if signed is not None:
            self._export_witness(signed)
        return events

    def checkpoint(self) -> SignedCheckpoint:
        """Sign the current tree head now (also done every `checkpoint_every` events)."""
        if self._signer is None:
            raise LedgerError("ledger opened read-only (no signing key)")
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._catch_up()
                signed = self._existing_checkpoint(self._frontier.size) or self._write_checkpoint()
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                self._frontier = Frontier()
                raise
        self._export_witness(signed)
        return signed

    def _catch_up(self) -> None:
        """Extend the cached Merkle frontier with events other writers appended."""
        rows = self._conn.execute(
            "SELECT seq, hash FROM events WHERE seq >= ? ORDER BY seq", (self._frontier.size,)
        ).fetchall()
        for seq, hash_ in rows:
            if seq != self._frontier.size:
                raise LedgerError(f"ledger has a gap before event {seq}")
            self._frontier.append(bytes.fromhex(hash_))

    def _tip_hash(self, size: int) -> str:
        if size == 0:
            return GENESIS_HASH
        return self._conn.execute("SELECT hash FROM events WHERE seq = ?", (size - 1,)).fetchone()[0]

    def _last_checkpoint_size(self) -> int:
        row = self._conn.execute("SELECT max(tree_size) FROM checkpoints").fetchone()
        return row[0] if row and row[0] is not None else 0

    def _existing_checkpoint(self, size: int) -> SignedCheckpoint | None:
        row = self._conn.execute("SELECT body, signature FROM checkpoints WHERE tree_size = ?", (size,)).fetchone()
        if row is None:
            return None
        return SignedCheckpoint(checkpoint=Checkpoint.model_validate_json(row[0]), signature=row[1],
                                public_key=self.public_pem)

    def _write_checkpoint(self) -> SignedCheckpoint:
        assert self._signer is not None
        cp = Checkpoint(run_id=self.run_id, tree_size=self._frontier.size, root=self._frontier.root().hex(),
                        ts=utc_now(), key_id=self._signer.key_id)
        signed = SignedCheckpoint.sign(cp, self._signer)
        self._conn.execute("INSERT INTO checkpoints VALUES (?, ?, ?, ?)",
                           (cp.tree_size, cp.root, cp.message(), signed.signature))
        return signed

    def _export_witness(self, signed: SignedCheckpoint) -> None:
        """Keep the newest checkpoint outside the run directory (rollback detection)."""
        if self._key_dir is None:
            return
        path = self._key_dir.witness_path(self.run_id)
        try:
            old = SignedCheckpoint.load(path) if path.exists() else None
        except Exception:  # an unreadable witness is replaced by a good one
            old = None
        if old is None or old.checkpoint.tree_size < signed.checkpoint.tree_size:
            write_json_atomic(path, signed.model_dump(mode="json"))

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
        sql = "SELECT hash FROM events ORDER BY seq"
        rows = self._conn.execute(sql + (f" LIMIT {int(size)}" if size is not None else "")).fetchall()
        return [bytes.fromhex(h) for (h,) in rows]

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

