"""A run whose ledger is on PostgreSQL (or its artifacts on shared storage), written out as an
ordinary run directory.

The rows are copied byte for byte (bodies, hashes, checkpoints, the seal and its signature) into
a fresh SQLite ledger with the same schema; nothing is re-signed, so the copy verifies only
if what was read verifies. Artifacts on shared storage are fetched into the copy's own
`artifacts/`, each measured on the way. The operator's signed witness is written beside it as
`witness.json`, so the copy can be verified anywhere with `verify DIR --checkpoint`.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from ..artifacts import ArtifactStore, SharedArtifactStore
from ..errors import NotARunError
from ..ledger import SQLITE_SCHEMA, KeyDir
from ._rundir import ARTIFACTS_DIR, LEDGER_FILE, PUBLIC_KEY_FILE, RunDir

__all__ = ["EXPORTED_WITNESS", "export_run"]

EXPORTED_WITNESS = "witness.json"
_TABLES = {
    "meta": "key, value",
    "events": "seq, prev_hash, hash, kind, actor_role, actor_id, ts, body",
    "artifact_refs": "seq, digest, role, name",
    "checkpoints": "tree_size, root, body, signature",
    "seal": "id, tree_size, body, signature",
}
# In key order: SQLite's chain trigger takes events only in sequence.
_ORDER = {
    "meta": "key",
    "events": "seq",
    "artifact_refs": "seq, digest, role, name",
    "checkpoints": "tree_size",
    "seal": "id",
}


def export_run(
    src: Path | str, dest: Path | str, *, key_dir: KeyDir | Path | str | None = None, ledger: str | None = None
) -> Path:
    """Write run `src` (any backend) to the new directory `dest`; return its path."""
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise NotARunError(f"{dest} exists and is not empty; refusing to overwrite it")
    keys = key_dir if isinstance(key_dir, KeyDir) else KeyDir(key_dir)
    run = RunDir.open(src, key_dir=keys, ledger=ledger)
    try:
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(src) / PUBLIC_KEY_FILE, dest / PUBLIC_KEY_FILE)
        if isinstance(run.store, SharedArtifactStore):  # the copy stands on its own: every artifact comes down
            run.store.copy_to(ArtifactStore(dest / ARTIFACTS_DIR))
        elif (Path(src) / ARTIFACTS_DIR).is_dir():
            shutil.copytree(Path(src) / ARTIFACTS_DIR, dest / ARTIFACTS_DIR, symlinks=True)
        out = sqlite3.connect(dest / LEDGER_FILE, isolation_level=None)
        try:
            out.execute("PRAGMA journal_mode = WAL")
            out.execute("BEGIN IMMEDIATE")
            for stmt in SQLITE_SCHEMA:
                out.execute(stmt)
            src_conn = run.ledger.connection
            src_conn.execute("BEGIN")  # one snapshot of every table
            try:
                for table, cols in _TABLES.items():
                    rows = src_conn.execute(f"SELECT {cols} FROM {table} ORDER BY {_ORDER[table]}").fetchall()
                    marks = ", ".join("?" * len(cols.split(", ")))
                    out.executemany(f"INSERT INTO {table} ({cols}) VALUES ({marks})", rows)
            finally:
                src_conn.execute("COMMIT")
            out.execute("COMMIT")
        finally:
            out.close()
        witness = keys.witness_path(run.run_id)
        if witness.is_file():
            shutil.copy2(witness, dest / EXPORTED_WITNESS)
    finally:
        run.ledger.connection.close()
    return dest
