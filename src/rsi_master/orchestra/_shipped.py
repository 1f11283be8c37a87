"""A Ray task's run directory on a machine that does not share the driver's filesystem.

A run whose ledger is in PostgreSQL and whose artifacts are on an fsspec URL keeps nothing in its
run directory that a job needs but three small public files: the ledger pointer (`ledger.pg`, a
URL without its password and the run id), the public key (`ledger.pub`) and the store pointer
(`artifacts.json`). The driver hands each task their bytes (`Shipped`, never the key directory or
any other file). A run with either on a server gets the settings they are reached by: the
driver's `AWS_*` and `FSSPEC_*` variables (S3 endpoint, region, credentials) and `PGPASSWORD`.
A task whose `launch.run_dir` is absent on its machine, or holds other bytes, writes those files into a run
directory of its own under this machine's temporary directory (`local_run_dir`), with its
artifact cache there, and opens the run from it. A run with a SQLite ledger or a local store has
its ledger or artifacts in the run directory itself: its tasks need the path on a shared
filesystem, and a task that cannot reach it fails with that said.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import RsiMasterError
from ..rundir import ARTIFACTS_POINTER, LEDGER_POINTER, PUBLIC_KEY_FILE

__all__ = ["SHIPPED_FILES", "Shipped", "drop_local_copy", "local_run_dir", "ship", "shipped_env"]

# The run directory's files a task gets the bytes of: public, and all a PostgreSQL + URL run holds.
SHIPPED_FILES = (LEDGER_POINTER, PUBLIC_KEY_FILE, ARTIFACTS_POINTER)
# The driver's variables a task runs with: how the store (s3fs, fsspec) and the ledger (libpq) are reached.
_ENV_PREFIXES = ("AWS_", "FSSPEC_")
_ENV_NAMES = ("PGPASSWORD",)


@dataclass(frozen=True)
class Shipped:
    """What the driver hands a task of the run at `run_dir`: the run id, the small files' bytes
    (empty where the run needs the shared filesystem, with `needs_shared` saying why) and the
    store's and ledger's settings."""

    run_dir: str
    run_id: str = ""
    files: Mapping[str, bytes] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    needs_shared: str = ""

    def __repr__(self) -> str:  # the settings may hold credentials: never in a log line
        return f"Shipped({self.run_dir!r}, files={sorted(self.files)}, env={sorted(self.env)})"


def ship(run_dir: str | Path, environ: Mapping[str, str] | None = None) -> Shipped:
    """The driver's side: what a task of the run at `run_dir` gets (read once per run)."""
    path = Path(run_dir)
    environ = os.environ if environ is None else environ
    pg, url = (path / LEDGER_POINTER).is_file(), (path / ARTIFACTS_POINTER).is_file()
    # The settings wherever the ledger or the store is reached through them; the files only for both.
    env = {k: v for k, v in environ.items() if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES} if pg or url else {}
    if not pg:
        return Shipped(str(path), env=env, needs_shared="its ledger is the SQLite file in the run directory")
    if not url:
        return Shipped(str(path), env=env, needs_shared="its artifacts are in the run directory's local store")
    files = {name: (path / name).read_bytes() for name in SHIPPED_FILES}
    run_id = json.loads(files[LEDGER_POINTER])["run_id"]
    return Shipped(str(path), run_id, files, env)


def _holds(path: Path, files: Mapping[str, bytes]) -> bool:
    try:
        return path.is_dir() and all((path / name).read_bytes() == data for name, data in files.items())
    except OSError:
        return False


def cache_root() -> Path:
    """Where this machine keeps the run directories its tasks materialise."""
    return Path(tempfile.gettempdir()) / f"rsi-master-{os.getuid()}" / "runs"


def local_run_dir(run_dir: str, shipped: Shipped | None) -> str:
    """The task's side: `run_dir` where this machine has it (with the shipped files' very bytes),
    else a run directory of this machine's with exactly the shipped files (its artifact cache
    beside them), written once and shared by the run's tasks here."""
    if shipped is None or (shipped.files and _holds(Path(run_dir), shipped.files)):
        return run_dir
    if not shipped.files:
        if Path(run_dir).is_dir():
            return run_dir
        raise RsiMasterError(
            f"{run_dir}: the run directory is not on this machine, and this run needs it on a filesystem "
            f"every node shares ({shipped.needs_shared}); a run with its ledger in PostgreSQL (--ledger) "
            "and its artifacts on a URL (--artifacts) runs without one"
        )
    root = cache_root()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    local = root / shipped.run_id
    local.mkdir(mode=0o700, exist_ok=True)
    for name, data in shipped.files.items():
        target = local / name
        with contextlib.suppress(OSError):
            if target.read_bytes() == data:
                continue
        # Written beside the run directory, then renamed in: a task here never reads half a file,
        # and the run directory never holds a file the audit does not know.
        part = root / f".{shipped.run_id}.{name}.{uuid.uuid4().hex}"
        part.write_bytes(data)
        os.replace(part, target)
    return str(local)


def drop_local_copy(run_id: str) -> bool:
    """Remove this machine's copy of run `run_id` (the shipped files and the artifact cache its
    tasks kept here); whether there was one. The driver runs this on every node when the run's
    scheduling ends: the run itself is in the ledger and on the shared store."""
    if not run_id or "/" in run_id or run_id in (".", ".."):
        return False
    local = cache_root() / run_id
    if not local.is_dir() or local.is_symlink():
        return False
    shutil.rmtree(local, ignore_errors=True)
    return not local.exists()


@contextlib.contextmanager
def shipped_env(shipped: Shipped | None) -> Iterator[None]:
    """The driver's store and ledger settings in this process while the task runs (a Ray worker
    process runs other tasks after it: the previous values come back)."""
    env = dict(shipped.env) if shipped is not None else {}
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
