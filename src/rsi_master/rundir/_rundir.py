"""A run directory: the ledger, the artifact store and the public key, in one place.

    RUN_DIR/ledger.db     append-only event ledger (SQLite, WAL), or
    RUN_DIR/ledger.pg     where it is instead: a PostgreSQL URL (no password) and the run id
    RUN_DIR/ledger.pub    Ed25519 public key that signs its checkpoints
    RUN_DIR/artifacts/    content-addressed store (with artifacts.json: this machine's cache of it)
    RUN_DIR/artifacts.json where the store is instead: an fsspec URL (shared path, S3-compatible)

The private key stays in the operator key directory (`KeyDir`), never in RUN_DIR.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..artifacts import ArtifactStore, RunStore, SharedArtifactStore, SharedStore, check_url
from ..errors import ArtifactError, NotARunError
from ..ledger import (
    Event,
    EventDraft,
    HeadSigner,
    KeyDir,
    Ledger,
    RemoteLedger,
    is_ledger_url,
    load_public_key,
    public_key_pem,
    public_url,
    validate_draft,
)

__all__ = [
    "ARTIFACTS_DIR",
    "ARTIFACTS_POINTER",
    "DRIVER_LOCK",
    "LEDGER_FILE",
    "LEDGER_POINTER",
    "PUBLIC_KEY_FILE",
    "REPORT_FILE",
    "RunDir",
    "is_run_dir",
    "new_run_id",
]

LEDGER_FILE = "ledger.db"
LEDGER_POINTER = "ledger.pg"
# Held (flock) by the process driving the run, and naming it (`orchestra._driver.one_driver`).
DRIVER_LOCK = "driver.lock"
# Where new runs keep their ledger (a PostgreSQL URL; unset: SQLite in the run directory), and
# the URL existing PostgreSQL runs are reached by: process configuration, as PGPASSWORD is, so
# that every process of a run (slots, evaluators, `verify`) reaches the same database.
LEDGER_ENV = "RSI_MASTER_LEDGER"


def is_run_dir(path: Path) -> bool:
    """True where `path` holds a ledger (the SQLite file, or the pointer to a PostgreSQL one)."""
    return (path / LEDGER_FILE).is_file() or (path / LEDGER_POINTER).is_file()


def _read_pointer(path: Path) -> tuple[str, str]:
    try:
        data = json.loads((path / LEDGER_POINTER).read_bytes())
        url, run_id = data["url"], data["run_id"]
    except (OSError, ValueError, KeyError, TypeError):
        raise NotARunError(f"{path / LEDGER_POINTER}: not a ledger pointer (url and run id)") from None
    if not is_ledger_url(url) or not isinstance(run_id, str):
        raise NotARunError(f"{path / LEDGER_POINTER}: not a ledger pointer (url and run id)")
    return url, run_id


PUBLIC_KEY_FILE = "ledger.pub"
# The HTML report a run writes at its end: a view regenerated from the ledger, never evidence.
REPORT_FILE = "report.html"
ARTIFACTS_DIR = "artifacts"
ARTIFACTS_POINTER = "artifacts.json"
# Where new runs keep their artifacts (an fsspec URL; unset: the run directory's `artifacts/`).
# Each run gets its own prefix under it (the run id), so pruning one run touches no other's blobs.
ARTIFACTS_ENV = "RSI_MASTER_ARTIFACTS"


def _open_store(path: Path, *, create: bool) -> RunStore:
    """The run's store: the local `artifacts/`, or the shared store `artifacts.json` names with
    `artifacts/` as this machine's cache of it."""
    if not (path / ARTIFACTS_POINTER).is_file():
        return ArtifactStore(path / ARTIFACTS_DIR, create=create)
    try:
        url = json.loads((path / ARTIFACTS_POINTER).read_bytes())["url"]
    except (OSError, ValueError, KeyError, TypeError):
        raise NotARunError(f"{path / ARTIFACTS_POINTER}: not an artifact store pointer (url)") from None
    if not isinstance(url, str):
        raise NotARunError(f"{path / ARTIFACTS_POINTER}: not an artifact store pointer (url)")
    return SharedArtifactStore(check_url(url), path / ARTIFACTS_DIR)


def new_run_id() -> str:
    return datetime.now(UTC).strftime("run-%Y%m%d-%H%M%S-") + secrets.token_hex(3)


class RunDir:
    """Open with `RunDir.create` (new run) or `RunDir.open` (existing run)."""

    def __init__(self, path: Path, ledger: Ledger, store: RunStore, key_dir: KeyDir | HeadSigner) -> None:
        self.path = path
        self.ledger = ledger
        self.store = store
        self.key_dir = key_dir

    @property
    def run_id(self) -> str:
        return self.ledger.run_id

    @classmethod
    def create(
        cls,
        path: Path | str,
        *,
        key_dir: KeyDir | Path | str | None = None,
        run_id: str | None = None,
        checkpoint_every: int = 1000,
        ledger: str | None = None,
        artifacts: str | None = None,
    ) -> RunDir:
        """A new run; `ledger` a PostgreSQL URL puts its ledger there (default: SQLite in the run),
        `artifacts` an fsspec URL its artifacts (default: the run directory's `artifacts/`)."""
        path = Path(path)
        ledger = ledger or os.environ.get(LEDGER_ENV) or None
        if ledger is not None and not is_ledger_url(ledger):
            raise NotARunError(f"--ledger {ledger!r}: not a postgresql:// URL")
        artifacts = artifacts or os.environ.get(ARTIFACTS_ENV) or None
        if artifacts is not None:
            artifacts = check_url(artifacts)
        keys = key_dir if isinstance(key_dir, KeyDir) else KeyDir(key_dir)
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise NotARunError(f"{path} exists and is not empty; refusing to overwrite it")
        signer = keys.default()
        if keys.path.resolve().is_relative_to(path.resolve()):
            raise NotARunError("the key directory must be outside the run directory")
        run_id = run_id or new_run_id()
        if artifacts is not None:
            SharedStore(f"{artifacts}/{run_id}").probe()
        path.mkdir(parents=True, exist_ok=True)
        (path / PUBLIC_KEY_FILE).write_bytes(public_key_pem(signer.public))
        store: RunStore
        if artifacts is None:
            store = ArtifactStore(path / ARTIFACTS_DIR)
        else:
            url = f"{artifacts}/{run_id}"
            (path / ARTIFACTS_POINTER).write_text(json.dumps({"url": url}, indent=1) + "\n")
            store = SharedArtifactStore(url, path / ARTIFACTS_DIR)
        if ledger is None:
            log = Ledger.create(path / LEDGER_FILE, run_id, signer, keys, checkpoint_every)
        else:
            log = Ledger.create(path / LEDGER_POINTER, run_id, signer, keys, checkpoint_every, url=ledger)
            pointer = {"url": public_url(ledger), "run_id": run_id}
            (path / LEDGER_POINTER).write_text(json.dumps(pointer, indent=1) + "\n")
        return cls(path, log, store, keys)

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        key_dir: KeyDir | HeadSigner | Path | str | None = None,
        writable: bool = False,
        checkpoint_every: int = 1000,
        ledger: str | None = None,
    ) -> RunDir:
        """Open a run; `writable` needs the operator's signing key for this run. `ledger`, a
        PostgreSQL URL, overrides the one the run directory names (another host or user).

        `key_dir` a `HeadSigner` (the driver's, for a job on another machine): the run is written
        with no key directory here; the signer signs each head and keeps the witness."""
        path = Path(path)
        keys = key_dir if isinstance(key_dir, (KeyDir, HeadSigner)) else KeyDir(key_dir)
        if not path.exists():
            raise NotARunError(f"{path}: no such run directory")
        if not path.is_dir():
            raise NotARunError(f"{path}: not a directory")
        if not os.access(path, os.R_OK | os.X_OK):
            raise NotARunError(f"{path}: run directory is not readable")
        if not is_run_dir(path) or not (path / PUBLIC_KEY_FILE).is_file():
            raise NotARunError(f"{path}: not an RSI-Master run directory (no {LEDGER_FILE} / {PUBLIC_KEY_FILE})")
        try:
            pem = (path / PUBLIC_KEY_FILE).read_bytes()
        except OSError as exc:
            raise NotARunError(f"{path / PUBLIC_KEY_FILE}: {exc.strerror}") from None
        public = load_public_key(pem)
        signer = keys.for_public(public) if writable and isinstance(keys, KeyDir) else None
        url: str | None = None
        run_id: str | None = None
        where = path / LEDGER_FILE
        if not where.is_file():
            where = path / LEDGER_POINTER
            pointed, run_id = _read_pointer(path)
            ledger = ledger or os.environ.get(LEDGER_ENV) or None
            if ledger is not None and not is_ledger_url(ledger):
                raise NotARunError(f"--ledger {ledger!r}: not a postgresql:// URL")
            url = ledger or pointed
        log: Ledger
        if isinstance(keys, KeyDir):
            log = Ledger.open(where, signer, keys, checkpoint_every, pem.decode(), url=url, run_id=run_id)
        elif writable:
            log = RemoteLedger.open_remote(where, keys, public, pem.decode(), checkpoint_every, url=url, run_id=run_id)
        else:
            log = Ledger.open(where, None, None, checkpoint_every, pem.decode(), url=url, run_id=run_id)
        return cls(path, log, _open_store(path, create=writable), keys)

    def close(self) -> None:
        self.ledger.close()

    def __enter__(self) -> RunDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, draft: EventDraft | dict[str, Any]) -> Event:
        return self.record_many([draft])[0]

    def record_many(self, drafts: Iterable[EventDraft | dict[str, Any]]) -> list[Event]:
        """Append events after checking that every artifact they reference is stored."""
        checked = [validate_draft(d) for d in drafts]
        for draft in checked:
            for ref in draft.artifacts:
                if not self.store.has(ref.digest):
                    raise ArtifactError(
                        f"event {draft.kind!r} references artifact {ref.digest} that is not in the store; nothing written"
                    )
        return self.ledger.append_many(checked)
