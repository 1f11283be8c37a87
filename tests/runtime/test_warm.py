"""The warm evaluator (`runtime/_warm.py`, `_zygote.py`): a sealed script forked from a
pre-imported Python behaves as the same script in a fresh `python -E -s -B`, and the zygote
gives its children nothing of its own: no control socket, no caller's path, no life of their
own after it or their timeout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rsi_master.runtime import _warm
from rsi_master.runtime._warm import WARM_ENV, run_sealed

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork, SCM_RIGHTS and /proc")

PROBE = textwrap.dedent(
    """
    import json, os, sys
    secret = sys.stdin.read()
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    import torch
    print(json.dumps({
        "argv": sys.argv[1:], "cwd": os.getcwd(), "stdin": secret, "env": os.environ.get("PROBE_VAR"),
        "path0": sys.path[0], "ppid": os.getppid(), "torch": torch.__file__,
        "sockets": sorted(fd for fd, target in fds.items() if target.startswith("socket:")),
        "flags": [sys.flags.ignore_environment, sys.flags.no_user_site, sys.flags.dont_write_bytecode],
    }))
    print("to stderr", file=sys.stderr)
    sys.exit(int(sys.argv[1]))
    """
)


@pytest.fixture
def probe(tmp_path):
    script = tmp_path / "seal" / "probe.py"
    script.parent.mkdir()
    script.write_text(PROBE)
    return script


def _run(script: Path, cwd: Path, *args: str, timeout: float = 120.0, extra_env=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PROBE_VAR": "from-the-request", **(extra_env or {})}
    return run_sealed(script, list(args), cwd=cwd, env=env, input="the seal key", timeout=timeout)


def _zygote_pid() -> int:
    assert _warm._zygote is not None and _warm._zygote.alive()
    return _warm._zygote.proc.pid


def test_a_forked_script_sees_what_a_fresh_interpreter_would(probe, tmp_path, monkeypatch):
    warm = _run(probe, tmp_path, "3", "two words")
    monkeypatch.setenv(WARM_ENV, "0")
    cold = _run(probe, tmp_path, "3", "two words")
    assert warm.returncode == cold.returncode == 3
    w, c = json.loads(warm.stdout), json.loads(cold.stdout)
    assert w["ppid"] == _zygote_pid() and c["ppid"] == os.getpid()  # one forked, one fresh
    for key in ("argv", "cwd", "stdin", "env", "path0", "torch", "flags"):
        assert w[key] == c[key], key
    assert w["argv"] == ["3", "two words"] and w["stdin"] == "the seal key" and w["path0"] == str(probe.parent)
    assert warm.stderr == cold.stderr == "to stderr\n"


def test_a_child_holds_no_socket_and_finds_nothing_on_the_callers_path(probe, tmp_path):
    # A `torch` on PYTHONPATH or in the working directory is what an agent could plant: the child
    # imports the interpreter's own, as `python -E -s -B` would.
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "torch.py").write_text("raise SystemExit('shadowed')\n")
    out = json.loads(_run(probe, shadow, "0", extra_env={"PYTHONPATH": str(shadow)}).stdout)
    assert out["sockets"] == []  # the zygote's control socket is closed before the script runs
    assert not out["torch"].startswith(str(shadow))


def test_a_timed_out_child_is_killed_and_the_zygote_serves_the_next(probe, tmp_path):
    slow = tmp_path / "seal" / "slow.py"
    slow.write_text("import os, sys, time\nprint(os.getpid(), flush=True)\ntime.sleep(60)\n")
    _run(probe, tmp_path, "0")
    zygote = _zygote_pid()
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        _run(slow, tmp_path, timeout=2.0)
    assert time.monotonic() - t0 < 30
    children = Path(f"/proc/{zygote}/task/{zygote}/children").read_text().split()
    assert children == []  # killed and reaped
    again = _run(probe, tmp_path, "0")
    assert again.returncode == 0 and json.loads(again.stdout)["ppid"] == zygote


@pytest.mark.heavy
def test_the_zygote_and_its_child_die_with_the_process_that_started_them(probe, tmp_path):
    slow = tmp_path / "seal" / "slow.py"
    slow.write_text("import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(120)\n")
    owner = textwrap.dedent(
        f"""
        import os, sys, threading, time
        from pathlib import Path
        from rsi_master.runtime import _warm
        _warm.run_sealed(Path({str(probe)!r}), ["0"], cwd=Path({str(tmp_path)!r}), env=dict(os.environ), input="", timeout=120)
        threading.Thread(target=_warm.run_sealed, args=(Path({str(slow)!r}), []),
                         kwargs=dict(cwd=Path({str(tmp_path)!r}), env=dict(os.environ), input="", timeout=120),
                         daemon=True).start()
        time.sleep(1)
        print(_warm._zygote.proc.pid, flush=True)
        time.sleep(120)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", owner], stdout=subprocess.PIPE, text=True)
    try:
        zygote = int(proc.stdout.readline())
        deadline = time.monotonic() + 30
        kids: list[str] = []
        while not kids and time.monotonic() < deadline:
            kids = Path(f"/proc/{zygote}/task/{zygote}/children").read_text().split()
            time.sleep(0.1)
        assert len(kids) == 1  # the slow script, forked from the zygote
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in (zygote, int(kids[0]))):
            time.sleep(0.1)
        for pid in (zygote, int(kids[0])):
            assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


@pytest.mark.heavy
def test_a_dead_zygote_falls_back_to_a_fresh_interpreter(probe, tmp_path, monkeypatch):
    _run(probe, tmp_path, "0")
    zygote = _warm._zygote
    assert zygote is not None
    # Died between two requests: the next request finds it gone before it sends anything.
    os.kill(zygote.proc.pid, signal.SIGKILL)
    zygote.proc.wait()
    out = _run(probe, tmp_path, "0")
    assert out.returncode == 0
    assert json.loads(out.stdout)["ppid"] in (os.getpid(), _zygote_pid())
    assert _warm._zygote is None or _warm._zygote.proc.pid != zygote.proc.pid


def test_the_harness_module_runs_with_the_callers_path(tmp_path, monkeypatch):
    # `python -m MODULE` of harness code (the sampler): warm, the child takes this process's
    # sys.path; cold, a fresh interpreter builds it from PYTHONPATH. Both find the same module.
    pkg = tmp_path / "pkgroot"
    pkg.mkdir()
    (pkg / "probe_mod.py").write_text(
        "import json, os, sys\nprint(json.dumps({'argv': sys.argv[1:], 'file': __file__, 'ppid': os.getppid()}))\n"
    )
    monkeypatch.syspath_prepend(str(pkg))
    env = {**os.environ, "PYTHONPATH": str(pkg)}
    warm = _warm.run_module("probe_mod", ["a", "b c"], env=env, timeout=120)
    monkeypatch.setenv(WARM_ENV, "0")
    cold = _warm.run_module("probe_mod", ["a", "b c"], env=env, timeout=120)
    w, c = json.loads(warm.stdout), json.loads(cold.stdout)
    assert w["ppid"] == _zygote_pid() and c["ppid"] == os.getpid()
    assert w["argv"] == c["argv"] == ["a", "b c"] and w["file"] == c["file"] == str(pkg / "probe_mod.py")


ATTACK = textwrap.dedent(
    """
    import json, os, socket, sys
    zygote = int(sys.argv[1])
    tried = {"uid": os.getuid()}
    try:
        tried["fds"] = os.listdir(f"/proc/{zygote}/fd")
    except OSError as exc:
        tried["fds"] = type(exc).__name__
    for fd in range(3, 64):
        try:
            os.open(f"/proc/{zygote}/fd/{fd}", os.O_RDWR)
            tried[f"open {fd}"] = "opened"
        except OSError as exc:
            tried[f"open {fd}"] = type(exc).__name__
    try:
        pidfd = os.pidfd_open(zygote)
        tried["getfd"] = [_try for _try in range(3, 64) if __import__("ctypes").CDLL(None, use_errno=True).syscall(438, pidfd, _try, 0) >= 0]
    except OSError as exc:
        tried["getfd"] = type(exc).__name__
    print(json.dumps(tried))
    """
)


@pytest.mark.skipif(os.geteuid() != 0, reason="runs the attack under an agent's uid (setpriv), which needs root")
def test_an_agent_of_another_uid_cannot_reach_the_zygote(probe, tmp_path):
    # The zygote is reached only through its socketpair. An agent with a shell under its own uid
    # (the door gives each agent one) tries the ways to another process's descriptors: listing
    # them, opening them through /proc, duplicating them with pidfd_getfd (syscall 438).
    from rsi_master.expos._identity import AGENT_UID_BASE, AGENT_UID_COUNT

    _run(probe, tmp_path, "0")
    zygote = _zygote_pid()
    uid = AGENT_UID_BASE + AGENT_UID_COUNT - 2
    as_agent = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", sys.executable, "-I"]
    out = subprocess.run([*as_agent, "-c", ATTACK, str(zygote)], capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 0, out.stderr
    tried = json.loads(out.stdout)
    assert tried["uid"] == uid and tried["fds"] == "PermissionError"
    assert all(v != "opened" for k, v in tried.items() if k.startswith("open "))
    assert tried["getfd"] == [] or isinstance(tried["getfd"], str)  # no descriptor duplicated
    # The control: under the zygote's own uid the same attack duplicates its socket (as such a
    # process could read the harness's memory too), so the test measures the uid boundary.
    own = json.loads(
        subprocess.run(
            [sys.executable, "-I", "-c", ATTACK, str(zygote)], capture_output=True, text=True, timeout=60, cwd="/"
        ).stdout
    )
    assert isinstance(own["fds"], list) and (own["getfd"] != [] or isinstance(own["getfd"], str))
    assert _run(probe, tmp_path, "0").returncode == 0  # and the zygote serves on


@pytest.mark.heavy
def test_a_zygote_first_asked_for_by_another_thread_outlives_that_thread(probe, tmp_path):
    # A door answers calls on worker threads. A child dies with the *thread* that started it
    # (PR_SET_PDEATHSIG), so the zygote is started by a spawner thread kept for that: the thread
    # that first needed it may end.
    import threading

    if _warm._zygote is not None:
        _warm._zygote.close()
        _warm._zygote = None
    seen = {}

    def first():
        seen["out"] = _run(probe, tmp_path, "0")

    t = threading.Thread(target=first)
    t.start()
    t.join()
    zygote = _zygote_pid()
    assert json.loads(seen["out"].stdout)["ppid"] == zygote  # forked, though not from the main thread
    time.sleep(0.5)
    again = _run(probe, tmp_path, "0")
    assert json.loads(again.stdout)["ppid"] == zygote and _warm._zygote.alive()
