"""Sealing the evaluator, running it from a private copy, and the seal secret.

The seal holds `evaluator.py` (a copy of `_evaluator.py`), a marker
`rsi_master/__init__.py` and a copy of the `rsi_master.tasks` package: everything that
decides a score. Its directory digest is the evaluator digest recorded in every
evaluation record and pinned by the task contract.

A seal in a run's store is a file an agent may be able to write, so an evaluation never
runs it in place: `private_seal` copies it into a directory only this process's user can
enter and hashes the copy, and the evaluator runs from that copy. The protected splits
are drawn from a per-run secret in the operator key directory (`load_seal_key`), which
reaches the evaluator through a pipe. docs/runtime.md, "Secret seals", says what this
rests on.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from rsi_master.ledger import default_key_dir, read_secret, write_secret
from rsi_master.runtime._backend import EvalBackend
from rsi_master.runtime._digest import dir_digest, sha256_bytes, sha256_file
from rsi_master.runtime._errors import EvaluationError, SealSecretError
from rsi_master.tasks import PUBLIC_SEAL_KEY, SealKey

__all__ = [
    "PrivateSeal",
    "create_seal_secret",
    "evaluator_digest",
    "load_seal_key",
    "operator_seal_key",
    "private_seal",
    "seal_commitment",
    "seal_evaluator",
    "seal_secret_path",
]

SECRET_BYTES = 32
SEALS_DIR = "seals"  # inside the operator key directory
# Not a possible run id (those start with a letter or digit), so it cannot shadow a run.
OPERATOR_SEAL = "_operator"
# A commitment must not double as anything else computed from the secret (the split MACs).
_COMMITMENT_TAG = b"rsi-master/seal-commitment/v1\x00"
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

# The seal's own package marker: fixed bytes, so it cannot differ between machines.
_MARKER = b'"""Sealed copy of the rsi_master task suite used by the evaluator."""\n'


def _tasks_root() -> Path:
    return Path(str(resources.files("rsi_master") / "tasks"))


TASK_DIR = "task"  # a task directory's files inside the seal (docs/your-model.md, "Task directories")


def _sources(
    extra: Sequence[str | Path], task_files: Mapping[str, bytes] | None = None, backend: EvalBackend | None = None
) -> list[tuple[str, Path | bytes]]:
    """(relative path in the seal, source file or literal bytes). `task_files` are a task
    directory's files as they were read and digested (`FileTask.files`), never re-read here."""
    out: list[tuple[str, Path | bytes]] = [
        ("evaluator.py", Path(__file__).with_name("_evaluator.py")),
        ("eval_backends.py", Path(__file__).with_name("_eval_backends.py")),
        # The backend and its settings are content of the seal, so the digest pins them.
        ("backend.json", (backend or EvalBackend()).seal_bytes()),
        ("rsi_master/__init__.py", _MARKER),
    ]
    root = _tasks_root()
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_dir() or "__pycache__" in rel.parts or p.suffix in (".pyc", ".pyo"):
            continue
        out.append((f"rsi_master/tasks/{rel.as_posix()}", p))
    for e in extra:
        path = Path(e)
        out.append((path.name, path))
    for name, data in sorted((task_files or {}).items()):
        out.append((f"{TASK_DIR}/{name}", bytes(data)))
    return out


def evaluator_digest(
    extra_sources: Sequence[str | Path] = (),
    task_files: Mapping[str, bytes] | None = None,
    backend: EvalBackend | None = None,
) -> str:
    """The digest a seal made now from the installed code would have (no copy made)."""
    lines = []
    for rel, src in _sources(extra_sources, task_files, backend):
        digest = sha256_bytes(src) if isinstance(src, bytes) else sha256_file(src)
        lines.append((rel, digest))
    lines.sort()
    return sha256_bytes("".join(f"{r}\t{d}\n" for r, d in lines).encode("utf-8"))


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rsi-master" / "sealed"


def seal_evaluator(
    store: Any = None,
    extra_sources: Sequence[str | Path] = (),
    task_files: Mapping[str, bytes] | None = None,
    backend: EvalBackend | None = None,
) -> tuple[Path, str]:
    """Copy the evaluator and tasks (and a task directory's files) into a sealed directory;
    return (path, digest).

    With a store, the seal is an artifact (read-only, content-addressed); without one it
    lives in a per-user cache named by its digest. `backend` (default `transformers`) is
    how the seal generates; it is part of what the digest covers.
    """
    with tempfile.TemporaryDirectory(prefix="rsi-seal-") as tmp:
        staging = Path(tmp) / "seal"
        _stage(staging, extra_sources, task_files, backend)
        digest = dir_digest(staging, ignore_pycache=True)
        if store is not None:
            stored = store.put_dir(staging)
            return Path(store.path(stored)), digest
        final = _cache_root() / digest
        if not final.is_dir() or dir_digest(final, ignore_pycache=True) != digest:
            final.parent.mkdir(parents=True, exist_ok=True)
            if final.exists():
                _make_writable(final)
                shutil.rmtree(final)
            shutil.copytree(staging, final)
            _make_read_only(final)
        return final, digest


def _make_read_only(root: Path) -> None:
    for p in sorted(root.rglob("*"), reverse=True):
        mode = p.stat().st_mode
        p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _make_writable(root: Path) -> None:
    root.chmod(root.stat().st_mode | stat.S_IWUSR)
    for p in root.rglob("*"):
        p.chmod(p.stat().st_mode | stat.S_IWUSR)


# -- running from a private copy ---------------------------------------------------------------
class PrivateSeal(NamedTuple):
    """A private working directory, the evaluator copy inside it, and that copy's digest."""

    root: Path
    seal: Path
    digest: str


def _copy_seal(source: Path, dest: Path) -> None:
    """Copy regular files only; bytecode caches are dropped, links and special files refused.

    A cache is not part of the digest, so one planted in the store must not ride along
    (Python would import it instead of the hashed source); a link would make the copy's
    bytes depend on a file outside the seal.
    """
    if source.is_symlink() or not source.is_dir():
        raise EvaluationError(f"sealed evaluator {source} is not a directory; refusing to evaluate")
    for dirpath, dirnames, filenames in os.walk(source):
        here = Path(dirpath)
        rel_dir = here.relative_to(source)
        (dest / rel_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in (*dirnames, *filenames):
            mode = os.lstat(here / name).st_mode
            if stat.S_ISLNK(mode) or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise EvaluationError(
                    f"sealed evaluator holds {rel_dir / name}, which is not a regular file; refusing to evaluate"
                )
        for name in sorted(filenames):
            (dest / rel_dir / name).write_bytes((here / name).read_bytes())


@contextmanager
def private_seal(
    source: str | Path | None = None,
    extra_sources: Sequence[str | Path] = (),
    task_files: Mapping[str, bytes] | None = None,
    backend: EvalBackend | None = None,
) -> Iterator[PrivateSeal]:
    """A private copy of the sealed evaluator and the digest of the bytes in it.

    `source` is a sealed copy to take (a run's stored seal); without one the copy is made
    from the installed code. The directory is new, mode 0700, and removed afterwards;
    the digest is computed here, by the process that launches the evaluator, over the
    files it is about to execute, so the check does not depend on the checked code.
    """
    root = Path(tempfile.mkdtemp(prefix="rsi-eval-"))
    try:
        root.chmod(0o700)
        seal = root / "seal"
        if source is None:
            _stage(seal, extra_sources, task_files, backend)
        else:
            _copy_seal(Path(source), seal)
        yield PrivateSeal(root, seal, dir_digest(seal, ignore_pycache=True))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _stage(
    dest: Path,
    extra_sources: Sequence[str | Path],
    task_files: Mapping[str, bytes] | None = None,
    backend: EvalBackend | None = None,
) -> None:
    for rel, src in _sources(extra_sources, task_files, backend):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(src, bytes):
            target.write_bytes(src)
        else:
            shutil.copyfile(src, target)


# -- the seal secret ---------------------------------------------------------------------------
def seal_commitment(secret: bytes) -> str:
    """What a contract records of its seal secret: enough to recognise it, nothing to draw with."""
    return hashlib.sha256(_COMMITMENT_TAG + secret).hexdigest()


def _key_dir_path(key_dir: Any) -> Path:
    if key_dir is None:
        return default_key_dir()
    return Path(getattr(key_dir, "path", key_dir)).expanduser()


def seal_secret_path(key_dir: Any, run_id: str) -> Path:
    """Where the seal secret of `run_id` lives: `<key dir>/seals/<run_id>.key`."""
    if not isinstance(run_id, str) or not (_RUN_ID.fullmatch(run_id) or run_id == OPERATOR_SEAL):
        raise SealSecretError(f"run id {run_id!r} cannot name a seal secret file")
    return _key_dir_path(key_dir) / SEALS_DIR / f"{run_id}.key"


def create_seal_secret(key_dir: Any, run_id: str) -> bytes:
    """Make a run's seal secret (once: an existing one is never replaced) and return it.

    Mode 0600 in a 0700 directory of the operator key directory, which `RunDir.create`
    keeps outside the run directory.
    """

    path = seal_secret_path(key_dir, run_id)
    try:
        return write_secret(path, SECRET_BYTES)
    except FileExistsError:
        raise SealSecretError(f"{path} already exists: a seal secret is made once per run id") from None
    except OSError as exc:
        raise SealSecretError(f"cannot write the seal secret {path}: {exc.strerror}") from None


def _read_secret(path: Path, run_id: str) -> bytes:

    try:
        return read_secret(path)
    except FileNotFoundError:
        raise SealSecretError(
            f"no seal secret for run {run_id} in {path.parent}: a run's protected splits are drawn only with the "
            "operator key directory that froze its contract (--key-dir or RSI_MASTER_KEY_DIR)"
        ) from None
    except ValueError:
        raise SealSecretError(f"{path} does not hold a seal secret") from None
    except OSError as exc:
        raise SealSecretError(f"cannot read the seal secret {path}: {exc.strerror or exc}") from None


def load_seal_key(key_dir: Any, run_id: str, commitment: str | None) -> SealKey:
    """The key to a run's protected splits: the one way a harness process gets it.

    `commitment` is the contract's; None (a v1 contract, frozen before seal secrets) means
    the public splits. Otherwise the secret must be in the key directory and match the
    commitment; there is no fallback to the public seed.
    """
    if commitment is None:
        return PUBLIC_SEAL_KEY
    path = seal_secret_path(key_dir, run_id)
    secret = _read_secret(path, run_id)
    if not hmac.compare_digest(seal_commitment(secret), commitment):
        raise SealSecretError(
            f"the seal secret in {path} is not the one run {run_id}'s contract committed to; "
            "refusing to draw protected items with it"
        )
    return SealKey(secret=secret)


def operator_seal_key(key_dir: Any = None) -> SealKey:
    """The key of operator commands outside a run (`rsi-master eval`, `pipeline`, `data generate`).

    One secret per key directory, made on first use: the operator's own scores are
    comparable with each other and with no run's (each run draws its own splits).
    """
    path = seal_secret_path(key_dir, OPERATOR_SEAL)
    if not path.exists():
        try:
            create_seal_secret(key_dir, OPERATOR_SEAL)
        except SealSecretError:
            if not path.exists():  # not a lost race with another operator command
                raise
    return SealKey(secret=_read_secret(path, OPERATOR_SEAL))
