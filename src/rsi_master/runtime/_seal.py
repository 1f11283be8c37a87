"""Sealing the evaluator: a digest-pinned, read-only copy of its code and the task suite.

The seal holds `evaluator.py` (a copy of `_evaluator.py`), a marker
`rsi_master/__init__.py` and a copy of the `rsi_master.tasks` package: everything that
decides a score. Its directory digest is the evaluator digest recorded in every
evaluation record and pinned by the task contract.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

from rsi_master.runtime._digest import dir_digest, sha256_bytes, sha256_file

# The seal's own package marker: fixed bytes, so it cannot differ between machines.
_MARKER = b'"""Sealed copy of the rsi_master task suite used by the evaluator."""\n'


def _tasks_root() -> Path:
    return Path(str(resources.files("rsi_master") / "tasks"))


def _sources(extra: Sequence[str | Path]) -> list[tuple[str, Path | bytes]]:
    """(relative path in the seal, source file or literal bytes)."""
    out: list[tuple[str, Path | bytes]] = [
        ("evaluator.py", Path(__file__).with_name("_evaluator.py")),
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
    return out


def evaluator_digest(extra_sources: Sequence[str | Path] = ()) -> str:
    """The digest a seal made now from the installed code would have (no copy made)."""
    lines = []
    for rel, src in _sources(extra_sources):
        digest = sha256_bytes(src) if isinstance(src, bytes) else sha256_file(src)
        lines.append((rel, digest))
    lines.sort()
    return sha256_bytes("".join(f"{r}\t{d}\n" for r, d in lines).encode("utf-8"))


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rsi-master" / "sealed"


def seal_evaluator(store: Any = None, extra_sources: Sequence[str | Path] = ()) -> tuple[Path, str]:
    """Copy the evaluator and tasks into a sealed directory; return (path, digest).

    With a store, the seal is an artifact (read-only, content-addressed); without one it
    lives in a per-user cache named by its digest.
    """
    with tempfile.TemporaryDirectory(prefix="rsi-seal-") as tmp:
        staging = Path(tmp) / "seal"
        for rel, src in _sources(extra_sources):
            dest = staging / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(src, bytes):
                dest.write_bytes(src)
            else:
                shutil.copyfile(src, dest)
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
