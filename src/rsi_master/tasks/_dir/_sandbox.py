"""Running a Python answer against its unit tests in a sandboxed subprocess.

What holds (docs/your-model.md, "Task directories"): the answer runs in a fresh interpreter
(`-I -S`: no site packages, no environment) in an empty temporary directory, with CPU time,
address space, file size limited and no new processes (RLIMIT_NPROC 0); in its own network
namespace (`unshare -rn`) when the kernel allows one, and in any case with socket creation,
process creation, signals, native code (ctypes) and frame/heap introspection refused by an
audit hook; the whole process group is killed at the wall-clock limit. It passes only when
the tests ran to the end: a random token, sent to the child on standard input, must be the last
line of its output, and the child prints it after the tests. Not held: an answer written to
find the token in its own interpreter's memory by means the hook does not see; the stated
limit of any in-process check.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

from .._protocol import Score

__all__ = ["network_isolation", "run_unit_tests"]

_CHILD = Path(__file__).with_name("_sandbox_child.py")
_OUTPUT_TAIL = 4096


@cache
def network_isolation() -> tuple[str, ...]:
    """The command prefix that gives the child its own empty network namespace, or () where the
    kernel or the tools do not allow it (the audit hook still refuses sockets)."""
    try:
        done = subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    return ("unshare", "-rn") if done.returncode == 0 else ()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def run_unit_tests(program: str, tests: str, timeout_s: float, memory_mb: int) -> Score:
    """1.0 when `tests` run to the end after `program`; 0.0 with the reason otherwise."""
    token = secrets.token_hex(16)
    payload = json.dumps(
        {"program": program, "tests": tests, "token": token, "timeout_s": timeout_s, "memory_mb": memory_mb}
    ).encode()
    with tempfile.TemporaryDirectory(prefix="rsi-sandbox-") as tmp:
        out_path = Path(tmp) / "out"
        work = Path(tmp) / "work"
        work.mkdir()
        with out_path.open("wb") as out:
            proc = subprocess.Popen(
                [*network_isolation(), sys.executable, "-I", "-S", "-B", str(_CHILD)],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=work,
                env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
                start_new_session=True,  # its own process group, killed as a whole
                close_fds=True,
            )
            try:
                proc.communicate(payload, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                return Score(0.0, f"unit tests: killed after {timeout_s:g}s")
            finally:
                # Also on the evaluator's own per-item alarm: nothing of the answer outlives the call.
                _kill(proc)
        with out_path.open("rb") as f:
            f.seek(max(0, out_path.stat().st_size - _OUTPUT_TAIL))
            tail = f.read().decode("utf-8", "replace")
    lines = tail.rstrip("\n").split("\n")
    if proc.returncode == 0 and lines and lines[-1] == token:
        return Score(1.0, "tests passed")
    last = next((line for line in reversed(lines) if line.strip() and line != token), "")
    if proc.returncode == 0:
        return Score(0.0, "unit tests: exited before the tests finished")
    if proc.returncode < 0:
        return Score(0.0, f"unit tests: killed by signal {-proc.returncode}")
    return Score(0.0, f"unit tests failed: {last[:160]}")
