"""Unit-test answers that cheat or misbehave: each is killed or refused and scores 0."""

from __future__ import annotations

import os
import time

import pytest

from rsi_master.tasks._dir import network_isolation, run_unit_tests

TESTS = "assert f(2) == 3\n"


def _run(program: str, timeout_s: float = 2.0) -> tuple[float, str]:
    s = run_unit_tests(program, TESTS, timeout_s, 256)
    return s.score, s.reason


def test_a_right_answer_passes() -> None:
    assert _run("def f(x):\n    return x + 1\n")[0] == 1.0


@pytest.mark.parametrize(
    "early",
    [
        "import sys\nsys.exit(0)\n",
        "import os\nos._exit(0)\n",
        "raise SystemExit(0)\n",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
        "def f(x):\n    return x + 1\nimport atexit, os\natexit.register(lambda: os._exit(0))\nraise SystemExit\n",
        # Printing what looks like success is not the token.
        "print('tests passed')\nprint('OK')\nimport sys\nsys.exit(0)\n",
    ],
)
def test_exiting_before_the_tests_does_not_pass(early: str) -> None:
    assert _run(early)[0] == 0.0


def test_an_endless_loop_is_killed_at_the_time_limit() -> None:
    t0 = time.monotonic()
    score, reason = _run("while True:\n    pass\n", timeout_s=1.0)
    assert score == 0.0 and ("killed" in reason or "signal" in reason)
    assert time.monotonic() - t0 < 10


def test_a_sleeping_answer_is_killed_at_the_wall_clock_limit() -> None:
    t0 = time.monotonic()
    score, reason = _run("import time\ntime.sleep(60)\n", timeout_s=1.0)
    assert score == 0.0 and "killed after" in reason
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize(
    "spawn",
    [
        "import os\nos.fork()\n",
        "import os\nwhile True:\n    os.fork()\n",
        "import subprocess\nsubprocess.run(['true'])\n",
        "import os\nos.system('true')\n",
        "import os\nos.execv('/bin/true', ['true'])\n",
        "import multiprocessing\nmultiprocessing.Process(target=print).start()\n",
    ],
)
def test_forking_is_refused(spawn: str) -> None:
    score, reason = _run(spawn + "def f(x):\n    return x + 1\n")
    assert score == 0.0, reason


@pytest.mark.parametrize(
    "net",
    [
        "import socket\nsocket.socket()\n",
        "import socket\nsocket.create_connection(('127.0.0.1', 9))\n",
        "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:9')\n",
    ],
)
def test_opening_a_socket_is_refused(net: str) -> None:
    score, reason = _run(net + "def f(x):\n    return x + 1\n")
    assert score == 0.0, reason


def test_native_code_and_memory_hogs_are_refused() -> None:
    assert _run("import ctypes\nctypes.CDLL(None)\ndef f(x):\n    return x + 1\n")[0] == 0.0
    assert _run("b = bytearray(2 * 1024 ** 3)\ndef f(x):\n    return x + 1\n")[0] == 0.0


def test_nothing_outlives_the_call(tmp_path) -> None:
    marker = tmp_path / "alive"
    # Refused as a fork; and were it not, the whole process group is killed on return.
    _run(f"import os\nif os.fork() == 0:\n    import time\n    time.sleep(2)\n    open({str(marker)!r}, 'w')\n")
    time.sleep(2.5)
    assert not marker.exists()


def test_network_isolation_is_reported() -> None:
    # Where user namespaces exist (this CI), the child gets no network at all; elsewhere the
    # audit hook alone refuses sockets (the socket tests above hold either way).
    assert network_isolation() in ((), ("unshare", "-rn"))
    if os.path.exists("/proc/self/ns/net") and network_isolation():
        assert _run("import os\nassert os.listdir('/sys/class/net') == ['lo']\ndef f(x):\n    return x + 1\n")[0] in (
            0.0,
            1.0,
        )
