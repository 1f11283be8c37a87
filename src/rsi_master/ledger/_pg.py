"""A ledger on PostgreSQL: the same rows, chain, seal and checkpoints as the SQLite file,
in one database schema per run (`_pg_schema`).

The ledger's SQL is written once, in SQLite's dialect (the embedded default). `PgConnection`
speaks the part of `sqlite3.Connection` the ledger uses and translates each statement once:
`?` parameters, `INSERT OR IGNORE`, `json_extract`, and the two ways a transaction begins. A
write transaction (`BEGIN IMMEDIATE` in SQLite) takes a transaction-scoped advisory lock on
the run, so writers on any number of machines append one after the other, each seeing the
rows the one before it committed; a read transaction is REPEATABLE READ, one snapshot, as
SQLite's deferred `BEGIN` is. Database errors surface as `sqlite3`'s DB-API classes, so the
ledger tells a refused insert from other failures the same way on both backends.

psycopg (3) is imported only here, and only when a PostgreSQL URL is given.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from ..errors import LedgerError, NotARunError
from ._pg_schema import EXPECTED, describe, install_sql

if TYPE_CHECKING:
    import psycopg

__all__ = ["PgConnection", "install", "is_url", "public_url"]

_SCHEMES = ("postgresql://", "postgres://")


def is_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith(_SCHEMES)


def public_url(url: str) -> str:
    """The URL without its password (kept in the run directory; libpq reads the password from
    PGPASSWORD or ~/.pgpass)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = (parts.username or "") + "@" + host + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _psycopg() -> object:
    try:
        import psycopg
    except ImportError:
        raise LedgerError("a PostgreSQL ledger needs psycopg: pip install 'rsi-master[scale]' (and libpq)") from None
    return psycopg


def _connect(url: str) -> psycopg.Connection:
    psycopg = _psycopg()
    try:
        return psycopg.connect(url, autocommit=True)  # type: ignore[attr-defined]
    except psycopg.Error as exc:  # type: ignore[attr-defined]
        raise NotARunError(f"{public_url(url)}: cannot connect to PostgreSQL ({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class Rows(Protocol):
    """What the ledger reads from a statement's result (as from `sqlite3.Cursor`): rows as tuples."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class PgIntegrityError(sqlite3.IntegrityError):
    """PostgreSQL refused a row (a trigger, a key or a privilege)."""


class PgDatabaseError(sqlite3.DatabaseError):
    """Any other PostgreSQL error."""


@functools.lru_cache(maxsize=256)
def _translate(sql: str) -> str:
    out = sql.replace("%", "%%").replace("?", "%s")
    if out.startswith("INSERT OR IGNORE INTO"):
        out = "INSERT INTO" + out[len("INSERT OR IGNORE INTO") :] + " ON CONFLICT DO NOTHING"
    return re.sub(
        r"json_extract\(CAST\((\w+) AS TEXT\), '\$\.([\w.]+)'\)",
        lambda m: f"(convert_from({m[1]}, 'UTF8')::jsonb #>> '{{{m[2].replace('.', ',')}}}')",
        out,
    )


class PgConnection:
    """One run's schema on a PostgreSQL server, as the ledger's connection."""

    def __init__(self, conn: psycopg.Connection, url: str, schema: str) -> None:
        self._conn = conn
        self.url = public_url(url)
        self.schema = schema
        # Two 32-bit keys: a constant for the ledger, then the run; the same on every machine.
        self._lock = (0x7253494D, int.from_bytes(hashlib.sha256(schema.encode()).digest()[:4], "big", signed=True))
        self._errors = _psycopg().Error  # type: ignore[attr-defined]
        self._integrity = (
            _psycopg().errors.IntegrityError,  # type: ignore[attr-defined]
            _psycopg().errors.InsufficientPrivilege,  # type: ignore[attr-defined]
        )
        conn.execute("SELECT set_config('search_path', %s, false)", (_quote(schema),))

    @property
    def in_transaction(self) -> bool:
        return bool(self._conn.info.transaction_status != 0)  # 0: IDLE

    def execute(self, sql: str, params: Sequence[object] = ()) -> Rows:
        try:
            if sql == "BEGIN IMMEDIATE":
                self._conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
                return self._conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", self._lock)
            if sql == "BEGIN":
                return self._conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            return self._conn.execute(_translate(sql), tuple(params))
        except self._errors as exc:
            raise self._mapped(exc) from None

    def executemany(self, sql: str, rows: Iterable[Sequence[object]]) -> None:
        try:
            with self._conn.cursor() as cur:
                cur.executemany(_translate(sql), [tuple(r) for r in rows])
        except self._errors as exc:
            raise self._mapped(exc) from None

    def _mapped(self, exc: BaseException) -> sqlite3.DatabaseError:
        cls = PgIntegrityError if isinstance(exc, self._integrity) else PgDatabaseError
        return cls(f"{self.url} ({self.schema}): {_first_line(exc)}")

    def schema_problems(self) -> Iterator[tuple[str, str]]:
        """(where, what) for each way the run's schema differs from the one `create_run` makes."""
        actual = describe(self._conn, self.schema)
        for typ, name, _ in sorted(EXPECTED - actual):
            yield f"schema {typ} {name}", "missing or altered (append-only protection removed?)"
        for typ, name, _ in sorted(actual - EXPECTED):
            if (typ, name) not in {(t, n) for t, n, _ in EXPECTED}:
                yield f"schema {typ} {name}", "not part of the ledger schema"

    def close(self) -> None:
        self._conn.close()

    @classmethod
    def open(cls, url: str, run_id: str) -> PgConnection:
        conn = _connect(url)
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (run_id,)).fetchone()
        if found is None:
            conn.close()
            raise NotARunError(f"{public_url(url)}: no ledger of run {run_id} in this database")
        return cls(conn, url, run_id)

    @classmethod
    def create(cls, url: str, run_id: str) -> PgConnection:
        """Make the run's schema through `rsi_ledger.create_run` (see `install`)."""
        if len(run_id.encode()) > 63:
            raise LedgerError(f"run id {run_id!r} is longer than PostgreSQL's 63-byte names")
        conn = _connect(url)
        psycopg = _psycopg()
        try:
            conn.execute("SELECT rsi_ledger.create_run(%s)", (run_id,))
        except psycopg.errors.UndefinedFunction:  # type: ignore[attr-defined]
            conn.close()
            raise LedgerError(
                f"{public_url(url)}: the ledger schema is not installed in this database "
                "(rsi-master ledger-install URL --writer ROLE, as a role that may create schemas)"
            ) from None
        except psycopg.Error as exc:  # type: ignore[attr-defined]
            conn.close()
            raise LedgerError(
                f"{public_url(url)}: cannot create the ledger of run {run_id}: {_first_line(exc)}"
            ) from None
        return cls(conn, url, run_id)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def install(url: str, writers: Sequence[str] = ()) -> None:
    """Install (or refresh) the ledger's functions in the database at `url`, and let the
    `writers` roles create runs; run as a role that may create schemas (the operator's)."""
    conn = _connect(url)
    try:
        with conn.transaction():
            for stmt in install_sql(tuple(writers)):
                conn.execute(stmt)
    except _psycopg().Error as exc:  # type: ignore[attr-defined]
        raise LedgerError(f"{public_url(url)}: cannot install the ledger schema: {_first_line(exc)}") from None
    finally:
        conn.close()
