"""Answers written against the harness, each run through a task directory's real `unit_tests`
scorer (FileTask.score, as the evaluator and GRPO's reward call it), as root with bubblewrap.

Most attacks are scored by call cases whose expected value is the thing stolen: the answer
passes only if the attack worked, so a score of 0 is the attack failing, and the reason says how.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import socket
import threading
import time
from pathlib import Path

import pytest

from rsi_master.tasks import load_task_dir
from rsi_master.tasks._dir._bwrap import SANDBOX_USER, isolation

from .helpers import make_task_dir, write_jsonl

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not isolation().sandboxed,
    reason="needs root and bubblewrap (.ci/run installs it and runs as root)",
)

SECRET = "s3cr3t-" + os.urandom(8).hex()


def _score(tmp_path: Path, program: str, tests: object) -> tuple[float, str]:
    """The score of `program` on a task item whose tests field is `tests`."""
    root = tmp_path / "task"
    if not root.exists():
        make_task_dir(root, "unit_tests")
    rows = [{"id": "d-0", "question": "x", "tests": tests}]
    write_jsonl(root / "dev.jsonl", rows)
    task = load_task_dir(root)
    s = task.score(task.eval_items("dev")[0], program)
    assert SECRET not in s.reason
    return s.score, s.reason


def _steal(tmp_path: Path, body: str) -> tuple[float, str]:
    """An answer `f()` whose body returns the stolen secret; expected is the secret itself."""
    program = "def f():\n" + "".join(f"    {line}\n" for line in body.splitlines())
    return _score(tmp_path, program, [{"call": "f", "args": [], "expected": SECRET}])


def _sandbox_processes() -> list[int]:
    uid = pwd.getpwnam(SANDBOX_USER).pw_uid
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                found.append(int(entry.name))
        except FileNotFoundError:
            continue
    return found


def test_an_honest_answer_passes_in_both_formats(tmp_path: Path) -> None:
    program = "def add(a, b):\n    return a + b\n"
    cases = [{"call": "add", "args": [1, 2], "expected": 3}, {"call": "add", "args": [[1], [2]], "expected": [1, 2]}]
    assert _score(tmp_path, program, cases) == (1.0, "2 cases passed")
    assert _score(tmp_path, program, ["assert add(1, 2) == 3", "assert add('a', 'b') == 'ab'"]) == (1.0, "tests passed")


def test_the_key_directory_cannot_be_read(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    (keys / "ledger.key").write_text(SECRET)
    os.chmod(keys / "ledger.key", 0o600)
    score, reason = _steal(tmp_path, f"return open({str(keys / 'ledger.key')!r}).read()")
    assert score == 0.0 and "FileNotFoundError" in reason


def test_etc_shadow_cannot_be_read(tmp_path: Path) -> None:
    score, reason = _steal(tmp_path, "return open('/etc/shadow').read()[:0] + " + repr(SECRET))
    assert score == 0.0 and "FileNotFoundError" in reason


def test_the_task_final_split_cannot_be_read(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "task", "unit_tests")
    final = root / "final.jsonl"
    final.write_text(final.read_text() + json.dumps({"id": "f-x", "question": SECRET, "tests": "pass"}) + "\n")
    body = f"import json\nfor line in open({str(final)!r}):\n    return json.loads(line)['question']"
    score, reason = _steal(tmp_path, body + "\n" + "return 'x'")
    assert score == 0.0 and "FileNotFoundError" in reason


def test_writes_and_renames_outside_the_sandbox_tmp_do_not_land(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("intact")
    body = (
        f"open({str(tmp_path / 'planted')!r}, 'w').write('x')\n"
        f"import os\nos.rename({str(victim)!r}, {str(tmp_path / 'moved')!r})\n"
        f"open('/tmp/mine', 'w').write('x')\nos.rename('/tmp/mine', '/planted')\nreturn {SECRET!r}"
    )
    score, _ = _steal(tmp_path, body)
    assert score == 0.0
    assert victim.read_text() == "intact" and not (tmp_path / "planted").exists() and not (tmp_path / "moved").exists()
    assert not Path("/planted").exists()


@pytest.mark.parametrize(
    "spawn",
    [
        # setsid and a double fork: the grandchild is re-parented and in a session of its own.
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        open('alive', 'w').close()\n        time.sleep(60)\n    os._exit(0)\n",
        # _posixsubprocess under any audit hook's radar: a fresh interpreter in a new session.
        "import _posixsubprocess, os, sys\nr, w = os.pipe()\n"
        "_posixsubprocess.fork_exec([sys.executable, '-c', 'import time; open(\"alive\", \"w\").close(); time.sleep(60)'], "
        "[sys.executable.encode()], True, (), None, None, -1, -1, -1, -1, -1, -1, r, w, True, True, -1, "
        "None, None, None, -1, None, False)\n",
    ],
)
def test_nothing_an_answer_starts_survives_the_call(tmp_path: Path, spawn: str) -> None:
    # f answers True only once the spawned process is up: it was running when the call ended.
    wait = "import time\ndef f():\n    for _ in range(200):\n        if os.path.exists('alive'):\n"
    wait += "            return True\n        time.sleep(0.01)\n    return False\n"
    assert _score(tmp_path, spawn + wait, [{"call": "f", "args": [], "expected": True}]) == (1.0, "1 cases passed")
    deadline = time.monotonic() + 2
    while _sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sandbox_processes() == []


def test_a_fork_bomb_is_bounded_and_ends_with_the_call(tmp_path: Path) -> None:
    program = "import os\nfor _ in range(10000):\n    try:\n        os.fork()\n    except OSError:\n        break\n"
    t0 = time.monotonic()
    score, _ = _score(tmp_path, program + "def f():\n    return 1\n", ["assert f() == 2"])
    assert score == 0.0 and time.monotonic() - t0 < 10
    # The sandbox uid's processes, machine-wide: another test process may be running a sandboxed
    # answer of its own at this moment, so wait for a moment with none, as the tests above do.
    deadline = time.monotonic() + 5
    while _sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sandbox_processes() == []


def test_the_capability_secret_cannot_be_copied_out(tmp_path: Path, monkeypatch) -> None:
    """From the environment, the harness's /proc entries, or a door socket beside the run."""
    monkeypatch.setenv("EXPOS_CAPABILITY", SECRET)
    door = tmp_path / "door.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(door))
    server.listen()
    body = (
        "import os, socket\nfound = os.environ.get('EXPOS_CAPABILITY', '')\n"
        f"for p in ('/proc/1/environ', '/proc/{os.getpid()}/environ', '/proc/self/environ'):\n"
        "    try:\n        found += open(p).read()\n    except OSError:\n        pass\n"
        f"s = socket.socket(socket.AF_UNIX)\ns.connect({str(door)!r})\nreturn found"
    )
    score, reason = _steal(tmp_path, body)
    server.close()
    assert score == 0.0 and "FileNotFoundError" in reason, reason


def test_the_expected_value_is_not_in_the_answer_s_memory(tmp_path: Path) -> None:
    """The old pass token lived in the child: now nothing the verdict needs enters it. The
    answer walks every frame and object it can reach for a string that looks like it."""
    body = (
        "import gc, sys\nseen = []\nframe = sys._getframe()\n"
        "while frame:\n    seen += [v for v in frame.f_locals.values() if isinstance(v, str)]\n    frame = frame.f_back\n"
        "try:\n    raise RuntimeError\nexcept RuntimeError as e:\n    tb = e.__traceback__\n"
        "    seen += [v for v in tb.tb_frame.f_back.f_globals.values() if isinstance(v, str)]\n"
        "seen += [o for o in gc.get_objects() if isinstance(o, str)]\n"
        "import json\nfor o in gc.get_objects():\n    if isinstance(o, (dict, list)):\n        seen += [json.dumps(o, default=str)]\n"
        f"return next((s for s in seen if {SECRET[:7]!r} in s), 'none')"
    )
    assert _steal(tmp_path, body)[0] == 0.0
    program = "def f():\n" + "".join(f"    {line}\n" for line in body.splitlines())
    assert _score(tmp_path, program, [f"assert f() == {SECRET!r}"])[0] == 0.0


@pytest.mark.parametrize(
    "impostor",
    [
        "class E:\n    def __eq__(self, o):\n        return True\n    __hash__ = None\n",
        "class E(int):\n    def __eq__(self, o):\n        return True\n    def __ne__(self, o):\n        return False\n",
        "class E(str):\n    def __eq__(self, o):\n        return True\n",
        "class E(list):\n    def __eq__(self, o):\n        return True\n",
    ],
)
def test_an_always_equal_object_scores_zero(tmp_path: Path, impostor: str) -> None:
    program = impostor + "def f(x):\n    return E()\n"
    assert _score(tmp_path, program, ["assert f(1) == 2", "assert f(2) == 'x'"])[0] == 0.0
    assert _score(tmp_path, program, [{"call": "f", "args": [1], "expected": 2}])[0] == 0.0


def test_forged_protocol_replies_are_only_claims(tmp_path: Path) -> None:
    """The answer writes reply lines straight onto every descriptor it holds: the harness still
    compares the values, and the expected one is not among them."""
    program = (
        "import os\nfor fd in range(3, 20):\n    try:\n"
        '        os.write(fd, b\'{"ok": true}\\n{"names": {}}\\n{"ok": "passed"}\\n\')\n'
        "    except OSError:\n        pass\ndef f():\n    return 0\n"
    )
    assert _score(tmp_path, program, [{"call": "f", "args": [], "expected": SECRET}])[0] == 0.0
    assert _score(tmp_path, program, [f"assert f() == {SECRET!r}"])[0] == 0.0


def test_no_network_and_no_host_proc(tmp_path: Path) -> None:
    got: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    server.settimeout(5)

    def accept() -> None:
        try:
            conn, _ = server.accept()
            got.append(conn.recv(100))
        except OSError:
            pass

    t = threading.Thread(target=accept)
    t.start()
    body = f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\ns.sendall(b'leak')\nreturn {SECRET!r}"
    score, reason = _steal(tmp_path, body)
    # The attempt is over: anything it sent has arrived. shutdown() wakes the blocked accept()
    # (close() alone would leave it waiting out its timeout).
    with contextlib.suppress(OSError):
        server.shutdown(socket.SHUT_RDWR)
    server.close()
    t.join()
    assert score == 0.0 and got == [] and ("ConnectionRefused" in reason or "unreachable" in reason), reason
    probe = "import os\ndef f():\n    return [os.path.exists('/proc'), os.path.exists('/etc'), os.getuid(), os.listdir('/')]\n"
    uid = pwd.getpwnam(SANDBOX_USER).pw_uid
    tops = sorted(os.listdir("/"))
    cases = [{"call": "f", "args": [], "expected": [False, False, uid, tops]}]
    assert _score(tmp_path, probe, cases)[0] == 0.0  # the sandbox's root is not the host's
    ok = [{"call": "f", "args": [], "expected": [False, False, uid, []]}]
    reason = _score(tmp_path, probe, ok)[1]
    assert "returned [false, false, " + str(uid) in reason and "home" not in reason and "work" not in reason


def test_a_memory_hog_and_a_disk_fill_fail_inside_their_limits(tmp_path: Path) -> None:
    assert _score(tmp_path, "b = bytearray(4 * 1024 ** 3)\ndef f():\n    return 1\n", ["assert f() == 1"])[0] == 0.0
    fill = "def f():\n    with open('/tmp/fill', 'wb') as out:\n        out.write(b'x' * (64 << 20))\n    return 1\n"
    score, reason = _score(tmp_path, fill, [{"call": "f", "args": [], "expected": 1}])
    assert score == 0.0 and ("File too large" in reason or "No space" in reason or "MemoryError" in reason), reason


def test_shadowing_the_tests_builtins_changes_nothing(tmp_path: Path) -> None:
    """An answer that defines `sorted`, `len` and `str` to make both sides of a test's
    comparison agree: the tests keep the harness's built-ins."""
    program = "def sorted(x):\n    return 0\ndef len(x):\n    return 3\ndef str(x):\n    return ''\ndef f(x):\n    return []\n"
    tests = ["assert sorted(f(1)) == sorted([3, 1, 2])", "assert len(f(1)) == 3", "assert str(f(1)) == str(12)"]
    score, reason = _score(tmp_path, program, tests)
    assert score == 0.0 and "AssertionError at line 1" in reason
