"""Fixtures for driving `rsi-master mcp` the way external clients do: as a command a client
starts (with the client's minimal environment), and a run built without training."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from rsi_master.expos import Caller, ExpOS
from tests.helpers import capability_file

ROOT = Path(__file__).parents[2]
VENV_BIN = Path(sys.executable).parent
RSI = str(VENV_BIN / "rsi-master")
LOCAL_INSPECTOR = ROOT / ".ci" / "node_modules" / ".bin" / "mcp-inspector"
LOCAL_NODE = ROOT / ".ci" / "node" / "node_modules" / ".bin"


@pytest.fixture(scope="session")
def rsi(tmp_path_factory) -> str:
    """The `rsi-master` of this checkout, as an MCP client starts it. Clients pass the
    server a minimal environment, so where PYTHONPATH makes this checkout's code win (a
    development worktree), a wrapper carries it; otherwise the venv's own command."""
    pythonpath = os.environ.get("PYTHONPATH")
    if not pythonpath:
        return RSI
    wrapper = tmp_path_factory.mktemp("bin") / "rsi-master"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH='{pythonpath}' OMP_NUM_THREADS=1 exec '{RSI}' \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def inspector_path() -> Path | None:
    """The MCP Inspector CLI: RSI_MASTER_INSPECTOR, or the one `.ci/run` installs."""
    given = os.environ.get("RSI_MASTER_INSPECTOR")
    if given:
        return Path(given) if Path(given).is_file() else None
    return LOCAL_INSPECTOR if LOCAL_INSPECTOR.is_file() else None


@pytest.fixture(scope="session")
def inspector() -> Path:
    path = inspector_path()
    if path is None or shutil.which("node", path=_node_path()) is None:
        msg = (
            "the MCP Inspector CLI is not installed (.ci/run installs it: npm ci --prefix .ci; or set "
            "RSI_MASTER_INSPECTOR)"
        )
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg + "; CI must run these tests")
        pytest.skip(msg)
    return path


def _node_path() -> str:
    """PATH with the node `.ci/run` installs first (the Inspector wants node >= 22.19)."""
    base = os.environ.get("PATH", "/usr/bin:/bin")
    return f"{LOCAL_NODE}:{base}" if LOCAL_NODE.is_dir() else base


def inspector_env(home: Path) -> dict[str, str]:
    """A small environment for the Inspector: its own HOME (it keeps a catalog there)."""
    return {
        "PATH": _node_path(),
        "HOME": str(home),
        "MCP_CATALOG_PATH": str(home / "catalog.json"),
        "MCP_CLIENT_CONFIG_PATH": str(home / "client.json"),
    }


@dataclass(frozen=True)
class Shared:
    """A run for calling every role's tools cheaply: a Worker w1 with a dataset and an
    experiment recorded as if trained (the base weights as its checkpoint, no evaluation)."""

    path: Path
    key_dir: Path
    dataset: str
    experiment: str

    def capability(self, role: str, caller_id: str) -> str:
        with ExpOS.open(self.path, key_dir=self.key_dir, writable=False) as x:
            return x.issue(role, caller_id)

    def server(self, rsi: str, role: str, caller_id: str, *extra: str) -> list[str]:
        """The operator's server (the run opened in its process, with the key directory)."""
        return [
            rsi,
            "mcp",
            str(self.path),
            "--capability-file",
            capability_file(self.capability(role, caller_id)),
            "--key-dir",
            str(self.key_dir),
            *extra,
        ]


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory) -> Shared:
    from rsi_master.expos._state import experiment_id

    root = tmp_path_factory.mktemp("shared")
    key_dir = root / "keys"
    main, w1 = Caller("main", "main"), Caller("worker", "w1")
    with ExpOS.create(root / "run", "knowledge", eval_limit=5, key_dir=key_dir, allowed_teachers=["hand-written"]) as x:
        x.call(main, "worker.add", {"worker_id": "w1", "task": "answer-only data"})
        dataset = x.call(w1, "data.generate", {"family": "answer_only", "n": 8}).dataset
        base = x.contract.base_model_artifact
        start = x.record(
            w1,
            "experiment.start",
            {
                "parent": "base",
                "parent_checkpoint": base,
                "dataset": dataset,
                "method": "sft",
                "spec": {"max_steps": 1, "batch_size": 8},
            },
        )
        xid = experiment_id(start.seq)
        x.record(w1, "experiment.finish", {"experiment_id": xid, "status": "completed", "checkpoint": base, "steps": 1})
    return Shared(root / "run", key_dir, dataset, xid)


def start_http(argv: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """Start an HTTP server on a free loopback port; (process, its URL)."""
    proc = subprocess.Popen(
        [*argv, "--transport", "http", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env if env is not None else {**os.environ, "OMP_NUM_THREADS": "1"},
    )
    deadline = time.monotonic() + 60
    line = ""
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if " at http://" in line or not line:
            break
    if " at http://" not in line:
        stop(proc)
        raise AssertionError(f"the HTTP server did not start: {line!r}")
    return proc, line.rsplit(" at ", 1)[1].strip()


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    finally:
        if proc.stderr:
            proc.stderr.close()
