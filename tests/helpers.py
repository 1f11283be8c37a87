"""Helpers shared by the tests."""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rsi_master.rundir import RunDir


def draft(i: int = 0, kind: str = "test.event", role: str = "worker", actor: str = "w1", **payload: Any) -> dict:
    return {"kind": kind, "actor": {"role": role, "id": actor}, "payload": {"i": i, **payload}}


def make_run(path: Path, events: int = 10, checkpoint_every: int = 4, artifacts: int = 2) -> RunDir:
    """A run with `events` events, some referencing stored artifacts; left open and writable."""
    run = RunDir.create(path, checkpoint_every=checkpoint_every)
    digests = [run.store.put_bytes(f"artifact {i}\n".encode() * 10) for i in range(artifacts)]
    for i in range(events):
        refs = [{"digest": digests[i % len(digests)], "role": "output"}] if digests and i % 3 == 0 else []
        run.record({**draft(i), "artifacts": refs})
    return run


_CAP_DIR: list[str] = []


def capability_file(token: str) -> str:
    """A 0600 file holding `token`, the way clients take a capability (never as an argument)."""
    if not _CAP_DIR:
        _CAP_DIR.append(tempfile.mkdtemp(prefix="rsi-caps-"))
        atexit.register(shutil.rmtree, _CAP_DIR[0], True)
    fd, path = tempfile.mkstemp(prefix="cap-", dir=_CAP_DIR[0])
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return path


V1_RUN = Path(__file__).parent / "fixtures" / "v1_run"


def v1_run(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the committed schema-v1 run (tests/fixtures/v1_run) and of its key directory,
    with the key directory's modes as the operator's code makes them: (run_dir, key_dir)."""
    import os
    import shutil

    run_dir, key_dir = tmp_path / "v1-run", tmp_path / "v1-keys"
    shutil.copytree(V1_RUN / "run", run_dir)
    shutil.copytree(V1_RUN / "keys", key_dir)
    for root, _dirs, files in os.walk(key_dir):
        os.chmod(root, 0o700)
        for f in files:
            os.chmod(os.path.join(root, f), 0o600)
    return run_dir, key_dir


def built_once(tmp_path_factory: Any, name: str, build: Callable[[Path], Path]) -> Path:
    """What `build(directory)` returns, built once per test run: pytest-xdist workers (each its
    own session) share one copy under the run's temporary root, the first to ask builds it while
    the others wait on a lock. For expensive read-only fixtures (a trained checkpoint); a test
    that changes one must change a copy. Without workers, a directory of this session's own."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return build(tmp_path_factory.mktemp(name))
    root = tmp_path_factory.getbasetemp().parent / "built-once"
    root.mkdir(exist_ok=True)
    done = root / f"{name}.path"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            out = build(Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root)))
            done.write_text(str(out))
    return Path(done.read_text())


# Test-size models of other architectures (shared with the task-directory end-to-end tests).
from tests.hf_model import hf_cache_layout, tiny_hf_model  # noqa: E402

__all__ = ["V1_RUN", "built_once", "capability_file", "draft", "hf_cache_layout", "make_run", "tiny_hf_model", "v1_run"]
