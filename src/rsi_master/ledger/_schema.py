"""The ledger's SQLite schema, and how a ledger database is opened.

The chain is enforced by the database, not only by `Ledger`: triggers refuse updates,
deletes and inserts that do not extend the chain, so a writer using plain SQL cannot
rewrite history without first altering the schema, which `verify` checks.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from .. import _clock, _durable
from ..errors import NotARunError
from ._event import GENESIS_HASH

__all__ = [
    "FORMAT",
    "SCHEMA",
    "SCHEMA_V1",
    "SCHEMA_VERSION",
    "SUPPORTED_SCHEMAS",
    "connect",
    "schema_for",
    "utc_now",
    "wall_utc",
]

FORMAT = "rsi-master-ledger"
# 1: checkpoints over raw event hashes, no seal (read and verified, never appended to).
# 2: RFC 6962 leaves (checkpoint version 2) and the seal.
SCHEMA_VERSION = "2"
SUPPORTED_SCHEMAS = ("1", "2")

_TABLES = ("meta", "events", "artifact_refs", "checkpoints")
SCHEMA_V1 = [
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
] + [
    f"CREATE TRIGGER {t}_no_{op.lower()} BEFORE {op} ON {t}"
    f" BEGIN SELECT RAISE(ABORT, 'ledger is append-only: {op} on {t} refused'); END"
    for t in _TABLES
    for op in ("UPDATE", "DELETE")
]
SCHEMA = [
    *SCHEMA_V1,
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
    # The process's clock (real, or a simulated campaign's): event timestamps are run time.
    return _iso(_clock.now())


def wall_utc() -> str:
    # The real clock, for the operator's key directory (when it saw a run), never for a run's records.
    return _iso(_clock.REAL.time())


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def connect(path: Path, *, create: bool) -> sqlite3.Connection:
    mode = "rwc" if create else "rw"
    try:
        conn = sqlite3.connect(f"file:{path}?mode={mode}", uri=True, isolation_level=None, timeout=60.0)
        conn.execute("PRAGMA busy_timeout = 60000")
        if create:
            conn.execute("PRAGMA journal_mode = WAL")
        # FULL: a committed event survives power loss, not only a killed process.
        conn.execute(f"PRAGMA synchronous = {'FULL' if _durable.durable() else 'OFF'}")
        # The UNIQUE prev_hash index has random keys: with SQLite's default 2 MB page
        # cache a large ledger misses on nearly every insert (32 MB holds ~300k events).
        conn.execute("PRAGMA cache_size = -32768")
    except sqlite3.DatabaseError as exc:
        raise NotARunError(f"{path}: not a readable ledger database ({exc})") from None
    return conn
