"""A child started with run_tied dies with its parent (the evaluator of a SIGKILLed run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")

PARENT = """
import subprocess, sys
from rsi_master._proc import run_tied
child = [sys.executable, "-c", "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)", sys.argv[1]]
(run_tied if sys.argv[2] == "tied" else subprocess.run)(child)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose (reaped by init shortly).
    stat = Path(f"/proc/{pid}/stat")
    return stat.is_file() and stat.read_text().split(")")[-1].split()[0] != "Z"


def _child_of_killed_parent(tmp_path: Path, mode: str) -> int:
    pid_file = tmp_path / f"{mode}.pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(pid_file), mode])
    deadline = time.monotonic() + 60
    while not (pid_file.is_file() and pid_file.read_text()):
        assert time.monotonic() < deadline, "child never started"
        time.sleep(0.05)
    child = int(pid_file.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    return child


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_tied_child_dies_with_its_parent(tmp_path: Path) -> None:
    child = _child_of_killed_parent(tmp_path, "tied")
    assert _gone_within(child, 10), "the tied child outlived its SIGKILLed parent"


def test_untied_child_would_outlive_it(tmp_path: Path) -> None:
    # The control: without run_tied the same child survives, so the test above measures the tie.
    child = _child_of_killed_parent(tmp_path, "plain")
    try:
        assert not _gone_within(child, 1.0)
    finally:
        os.kill(child, signal.SIGKILL)
