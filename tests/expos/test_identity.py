"""One identity per agent, nothing outlives it, its capability out of other agents' reach.

Each test runs agents through `rsi-master agent` (as root: a uid of its own, its own PID and
mount namespaces, bounded) and attacks from inside them, as a Python or shell script would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from rsi_master.expos._identity import AGENT_UID_BASE, AGENT_UID_COUNT
from tests.helpers import capability_file
from tests.tasks.dir.helpers import make_task_dir

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a uid per agent needs root (CI runs as root)")


def _cli(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    kw.setdefault("timeout", 300)
    return subprocess.run([sys.executable, "-m", "rsi_master.cli", *args], capture_output=True, text=True, **kw)


_KEYS: list[str] = []  # the module's key directory (each test's own is set by an autouse fixture)


def _env() -> dict[str, str]:
    return {**os.environ, "RSI_MASTER_KEY_DIR": _KEYS[0]}


def _uid_pids(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            line = next((x for x in status.splitlines() if x.startswith("Uid:")), "Uid: -1")
            if int(line.split()[1]) == uid:
                pids.append(int(entry))
    return pids


def _gone(uid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while _uid_pids(uid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


class Place:
    """A run served by one door, in a world-traversable place outside /tmp (agents see their own /tmp)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.run = base / "run"
        self.sock = base / "door" / "d.sock"

    def agent(self, *cmd: str, role: str = "worker", node: str = "w1", opts: tuple[str, ...] = (), **kw):
        args = ["agent", str(self.run), "--role", role, "--id", node, "--socket", str(self.sock), *opts, "--", *cmd]
        return _cli(*args, env=_env(), **kw)

    def agent_popen(
        self, *cmd: str, role: str = "worker", node: str = "w1", run: Path | None = None, sock: Path | None = None
    ) -> subprocess.Popen[str]:
        """The agent started in the background (on this place's run and door unless told otherwise)."""
        run, sock = run or self.run, sock or self.sock
        args = ["agent", str(run), "--role", role, "--id", node, "--socket", str(sock), "--", *cmd]
        return subprocess.Popen(
            [sys.executable, "-m", "rsi_master.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )


@pytest.fixture(scope="module")
def place():
    if os.geteuid() != 0:
        pytest.skip("a uid per agent needs root (CI runs as root)")
    base = Path(tempfile.mkdtemp(prefix="rsi-identity-", dir="/var/lib"))
    os.chmod(base, 0o755)
    _KEYS[:] = [str(base / "keys")]
    p = Place(base)
    assert _cli("init", "--task", "arithmetic", "--dir", str(p.run), env=_env()).returncode == 0
    door = subprocess.Popen(
        [sys.executable, "-m", "rsi_master.cli", "door", str(p.run), "--socket", str(p.sock)],
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert "serving" in door.stderr.readline()
    yield p
    door.terminate()
    door.wait(timeout=30)
    door.stderr.close()
    subprocess.run(["rm", "-rf", str(base)], check=False)


def _read_as(uid: int, path: str) -> subprocess.CompletedProcess[bytes]:
    """`cat path` as `uid`, outside any namespace (the uid's own rights, nothing else)."""
    return subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", "cat", path], capture_output=True
    )


SLEEPER = "import os, sys, time; print(os.getuid(), flush=True); time.sleep(120)"

THIEF = r"""
import glob, json, os, sys
out = {"uid": os.getuid(), "attempts": {}, "tokens_seen": []}
needle = ("rsicap" + "1.").encode()  # not in this script's own command line
for pid in sys.argv[1:]:
    for what in ("environ", "cmdline", "root/home/agent/.expos-capability", "mem"):
        try:
            with open(f"/proc/{pid}/{what}", "rb") as fh:
                data = fh.read(65536)
            out["attempts"][f"{pid}/{what}"] = "read"
            if needle in data:
                out["tokens_seen"].append(f"{pid}/{what}")
        except OSError as exc:
            out["attempts"][f"{pid}/{what}"] = type(exc).__name__
me = str(os.getpid())
for path in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
    try:
        if needle in open(path, "rb").read():
            out["tokens_seen"].append(path)
    except OSError:
        pass
out["visible_pids"] = sorted(int(p.split("/")[2]) for p in glob.glob("/proc/[0-9]*/stat"))
print(json.dumps(out))
"""


@pytest.mark.heavy
@needs_root
def test_two_agents_of_different_roles_cannot_read_each_others_capability(place):
    reviewer = place.agent_popen(sys.executable, "-c", SLEEPER, role="reviewer", node="r1")
    try:
        reviewer_uid = int(reviewer.stdout.readline())
        assert AGENT_UID_BASE <= reviewer_uid < AGENT_UID_BASE + AGENT_UID_COUNT
        pids = _uid_pids(reviewer_uid)
        assert pids
        # Seen from the host, as root: the token is in no argv and no environment of the agent.
        for pid in pids:
            for what in ("cmdline", "environ"):
                assert b"rsicap1." not in Path(f"/proc/{pid}/{what}").read_bytes()
        thief = place.agent(sys.executable, "-c", THIEF, *map(str, pids))
        assert thief.returncode == 0, thief.stderr
        out = json.loads(thief.stdout)
        assert out["uid"] != reviewer_uid and AGENT_UID_BASE <= out["uid"] < AGENT_UID_BASE + AGENT_UID_COUNT
        assert out["tokens_seen"] == []
        assert set(out["attempts"].values()) <= {"FileNotFoundError", "PermissionError"}, out["attempts"]
        assert max(out["visible_pids"]) < 100  # its own namespace: the reviewer and the harness are not there
        # The uid alone already refuses: the worker's uid, outside any namespace, on the reviewer's entries.
        for what in ("environ", "root/home/agent/.expos-capability"):
            peek = _read_as(out["uid"], f"/proc/{pids[-1]}/{what}")
            assert peek.returncode != 0 and b"rsicap1." not in peek.stdout and b"denied" in peek.stderr
    finally:
        reviewer.kill()
        reviewer.wait()
        reviewer.stdout.close()
        reviewer.stderr.close()


def _gate_pids(sock: Path) -> list[int]:
    """The gate processes (`rsi_master.expos._gate_server`) of the door serving on `sock`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if b"rsi_master.expos._gate_server" not in Path(f"/proc/{entry}/cmdline").read_bytes():
                    continue
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
                if str(sock).encode() in Path(f"/proc/{ppid}/cmdline").read_bytes():
                    found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


@pytest.mark.heavy
@needs_root
def test_an_agent_of_another_role_cannot_reach_the_runs_gate(place):
    """The gate holds the seal key and draws the protected items, beside the door, as the harness.
    A Worker's `data.generate` through the door starts it; a Reviewer's shell then tries on it
    everything the capability thief tries, and does not even see it."""
    made = place.agent("sh", "-c", 'echo \'{"family": "answer_only", "n": 3}\' | expos data.generate -')
    assert made.returncode == 0 and "dataset" in made.stdout, made.stderr
    gates = _gate_pids(place.sock)
    assert gates, "the Worker's data.generate ran without the run's gate"
    thief = place.agent(sys.executable, "-c", THIEF, *map(str, gates), role="reviewer", node="r9")
    assert thief.returncode == 0, thief.stderr
    out = json.loads(thief.stdout)
    assert set(out["attempts"].values()) <= {"FileNotFoundError", "PermissionError"}, out["attempts"]
    assert max(out["visible_pids"]) < 100  # its own PID namespace: the door and its gate are not there
    assert Path(f"/proc/{gates[0]}/environ").read_bytes() is not None  # the gate is alive, as root sees it
    # Outside any namespace, the agent's uid alone is refused the gate's memory and environment.
    for what in ("mem", "environ"):
        peek = _read_as(out["uid"], f"/proc/{gates[0]}/{what}")
        assert peek.returncode != 0 and peek.stdout == b"" and b"denied" in peek.stderr, (what, peek.stderr)


@pytest.mark.heavy
def test_a_capability_on_the_command_line_or_in_the_environment_is_refused(tmp_path):
    token = "rsicap1.e30.AAAA"
    expos = [sys.executable, "-m", "rsi_master.cli._expos", "--door", str(tmp_path / "d.sock")]
    mcp = [sys.executable, "-m", "rsi_master.cli", "mcp", "--door", str(tmp_path / "d.sock")]
    tries = [
        ([*expos, "--capability", token, "quota.show"], {}),
        ([*expos, "quota.show"], {"EXPOS_CAPABILITY": token}),
        ([*mcp, "--capability", token], {}),
        (mcp, {"EXPOS_CAPABILITY": token}),
        (mcp, {"RSI_MASTER_CAPABILITY": token}),
    ]
    for cmd, extra in tries:
        res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **extra}, timeout=120)
        assert res.returncode == 2, (cmd, res.stderr)
        assert res.stderr.count("\n") == 1 and "--capability-file" in res.stderr and "standard input" in res.stderr
        assert token not in res.stderr


@pytest.mark.heavy
def test_a_capability_comes_from_a_file_standard_input_or_a_descriptor(tmp_path, monkeypatch):
    monkeypatch.setenv("RSI_MASTER_KEY_DIR", str(tmp_path / "keys"))
    run = tmp_path / "run"
    assert _cli("init", "--task", "arithmetic", "--dir", str(run)).returncode == 0
    token = _cli("capability", str(run), "--role", "worker", "--id", "w1").stdout.strip()
    expos = [sys.executable, "-m", "rsi_master.cli._expos", "--run", str(run)]
    by_file = subprocess.run([*expos, "--capability-file", capability_file(token), "quota.show"], capture_output=True)
    by_stdin = subprocess.run(
        [*expos, "--capability-file", "-", "data.generate", "-"],
        input=f'{token}\n{{"family": "answer_only", "n": 5}}'.encode(),
        capture_output=True,
    )
    r, w = os.pipe()
    os.write(w, token.encode())
    os.close(w)
    by_fd = subprocess.run(
        [*expos, "quota.show"], capture_output=True, pass_fds=[r], env={**os.environ, "EXPOS_CAPABILITY_FD": str(r)}
    )
    os.close(r)
    assert by_file.returncode == 0 and b"experiments_left" in by_file.stdout, by_file.stderr
    assert by_stdin.returncode == 0 and b"dataset" in by_stdin.stdout, by_stdin.stderr
    assert by_fd.returncode == 0 and b"experiments_left" in by_fd.stdout, by_fd.stderr


@needs_root
def test_a_setsid_grandchild_ends_with_the_agents_command(place):
    script = "setsid sh -c 'sleep 300' >/dev/null 2>&1 < /dev/null & sleep 0.5; id -u"
    res = place.agent("sh", "-c", script, timeout=120)
    assert res.returncode == 0, res.stderr
    uid = int(res.stdout.split()[-1])
    assert _gone(uid, within=5)


@needs_root
def test_killing_the_harness_ends_the_agent(place):
    agent = place.agent_popen(sys.executable, "-c", SLEEPER)
    try:
        uid = int(agent.stdout.readline())
        assert _uid_pids(uid)
        agent.send_signal(signal.SIGKILL)  # no cleanup in the harness: the kernel must end the agent
        agent.wait()
        assert _gone(uid, within=10)
    finally:
        agent.stdout.close()
        agent.stderr.close()


FORK_BURST = r"""
import os, time
n, err = 0, ""
kids = []
for _ in range(500):
    try:
        pid = os.fork()
    except OSError as exc:
        err = type(exc).__name__
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
print(len(kids), err, flush=True)
"""


@needs_root
def test_a_fork_burst_is_bounded(place):
    res = place.agent(sys.executable, "-c", FORK_BURST, opts=("--max-procs", "24"), timeout=120)
    assert res.returncode == 0, res.stderr
    started, err = res.stdout.split()
    assert int(started) < 24 and err == "BlockingIOError"


DISK_FILL = r"""
import json, os
out = {}
for where in (os.path.expanduser("~"), "/tmp", "/var/tmp", "/dev/shm", "/var/lib", "/etc", "/usr/local"):
    written, err = 0, "none"
    try:
        with open(os.path.join(where, "fill"), "wb") as fh:
            for _ in range(64):
                fh.write(b"x" * (1 << 20))
                fh.flush()
                written += 1 << 20
    except OSError as exc:
        err = type(exc).__name__ + ":" + str(exc.errno)
    out[where] = [written, err]
print(json.dumps(out))
"""


@needs_root
def test_a_disk_fill_is_bounded(place):
    res = place.agent(sys.executable, "-c", DISK_FILL, opts=("--disk", "8M"), timeout=120)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    for where in ("/home/agent", "/tmp", "/var/tmp", "/dev/shm"):
        written, err = out[where]
        assert written <= 8 << 20 and err != "none", (where, out[where])
    for where in ("/var/lib", "/etc", "/usr/local"):
        assert out[where][0] == 0 and out[where][1] in {"OSError:30", "PermissionError:13"}, (where, out[where])


@needs_root
def test_memory_is_bounded(place):
    grab = "b = bytearray(1 << 30); print('allocated')"
    res = place.agent(sys.executable, "-c", grab, opts=("--memory", "256M"), timeout=120)
    assert res.returncode != 0 and "MemoryError" in res.stderr and "allocated" not in res.stdout


@needs_root
def test_the_home_is_ephemeral(place):
    first = place.agent("sh", "-c", "echo secret > ~/marker && ls ~ && echo $HOME", timeout=120)
    assert first.returncode == 0 and "marker" in first.stdout, first.stderr
    second = place.agent("sh", "-c", "ls -A ~", timeout=120)
    assert second.returncode == 0 and "marker" not in second.stdout
    assert not Path("/home/agent/marker").exists()


@pytest.mark.heavy
@needs_root
def test_a_readable_task_directory_is_refused_and_a_closed_one_stays_out_of_reach(place):
    base = place.base / "own"
    base.mkdir()
    task = make_task_dir(base / "task", "exact_match", name="own-task")
    run = base / "run"
    init = _cli("init", "--task", str(task), "--dir", str(run), env=_env())
    assert init.returncode == 0, init.stderr
    for d in (base, task):
        os.chmod(d, 0o755)
    os.chmod(task / "final.jsonl", 0o644)
    sock = str(base / "door" / "d.sock")
    probe = """
import glob, json, sys
out = {}
try:
    out["final"] = open(sys.stdin.read().strip() + "/final.jsonl").read()
except OSError as exc:
    out["final"] = type(exc).__name__
needle = "own" + "/task"
out["named_by"] = [p for p in glob.glob("/proc/[0-9]*/cmdline") if needle in open(p).read()]
print(json.dumps(out))
"""
    agent = ["agent", str(run), "--role", "worker", "--id", "w1", "--socket", sock, "--", sys.executable, "-c", probe]
    refused = _cli(*agent, input=str(task), env=_env())
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "task directory" in refused.stderr and "chmod o-rwx" in refused.stderr
    os.chmod(task, 0o750)
    # The operator's harness names the task directory on its command line, as `rsi-master run --task DIR` does.
    decoy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--task", str(task)])
    try:
        res = _cli(*agent, input=str(task), env=_env())
    finally:
        decoy.kill()
        decoy.wait()
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"final": "PermissionError", "named_by": []}


@needs_root
def test_a_fresh_clone_venv_under_a_closed_directory_works(place):
    """The operator's venv under a 0700 directory (a clone in /root): the agent still gets `expos`."""
    closed = place.base / "home-of-root"
    closed.mkdir(mode=0o700)
    venv = closed / "clone" / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    import rsi_master

    site = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    src = Path(rsi_master.__file__).resolve().parents[1]
    (next(venv.glob("lib/python*/site-packages")) / "clone.pth").write_text(f"{site}\n{src}\n")
    py = venv / "bin" / "python"
    (venv / "bin" / "expos").write_text(f"#!{py}\nfrom rsi_master.cli._expos import console\nconsole()\n")
    os.chmod(venv / "bin" / "expos", 0o755)
    res = subprocess.run(
        [
            str(py),
            "-m",
            "rsi_master.cli",
            "agent",
            str(place.run),
            "--role",
            "worker",
            "--id",
            "w2",
            "--socket",
            str(place.sock),
            "--",
            "expos",
            "quota.show",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )
    assert res.returncode == 0 and "experiments_left" in res.stdout, res.stderr
    assert os.stat(closed).st_mode & 0o777 == 0o700  # nothing was opened for it


@pytest.mark.heavy
@needs_root
def test_the_agent_ends_when_the_runs_door_goes(place):
    sock = place.base / "door2" / "d.sock"
    door = subprocess.Popen(
        [sys.executable, "-m", "rsi_master.cli", "door", str(place.run), "--socket", str(sock)],
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert "serving" in door.stderr.readline()
        agent = place.agent_popen(sys.executable, "-c", SLEEPER, node="w3", run=place.run, sock=sock)
        uid = int(agent.stdout.readline())
        door.terminate()
        door.wait(timeout=30)
        agent.wait(timeout=30)
        assert "door is gone" in agent.stderr.read()
        assert _gone(uid, within=5)
        agent.stdout.close()
        agent.stderr.close()
    finally:
        if door.poll() is None:
            door.kill()
        door.stderr.close()


def test_bad_limits_get_one_line(tmp_path):
    for opts, says in ((("--memory", "lots"), "--memory 'lots'"), (("--max-procs", "2"), "at least 8")):
        res = _cli("agent", str(tmp_path), "--role", "worker", "--id", "w1", *opts, "--", "true")
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and says in res.stderr, res.stderr


@pytest.mark.heavy
@needs_root
def test_an_exposed_tool_under_a_closed_directory_runs_and_private_paths_cannot_be_exposed(place):
    tools = place.base / "closed-home" / "tools"
    tools.mkdir(parents=True)
    os.chmod(tools.parent, 0o700)
    (tools / "mytool").write_text("#!/bin/sh\necho tool ran as $(id -u)\n")
    os.chmod(tools / "mytool", 0o755)
    hidden = place.agent(str(tools / "mytool"))
    assert hidden.returncode != 0 and "tool ran" not in hidden.stdout
    shown = place.agent(str(tools / "mytool"), opts=("--expose", str(tools)))
    assert shown.returncode == 0 and "tool ran as 21470" in shown.stdout, shown.stderr
    for private in (place.run, place.run / "ledger.db", place.base):
        res = place.agent("true", opts=("--expose", str(private)))
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and "must not see" in res.stderr, res.stderr


KEYRING = r"""
import ctypes, sys
nr = {"x86_64": (248, 250), "aarch64": (217, 219)}[__import__("platform").machine()]
call = ctypes.CDLL(None, use_errno=True).syscall
if sys.argv[1] == "put":
    assert call(nr[0], b"user", b"stash", b"a-stolen-token", 14, ctypes.c_int(-4)) > 0
else:
    print("found" if call(nr[1], 10, ctypes.c_int(-4), b"user", b"stash", 0) > 0 else "empty")
"""


@needs_root
def test_a_reused_uid_starts_with_empty_keyrings(place):
    """The kernel keeps a uid's keyring after its processes end: what one agent stashed there must
    not reach the next agent given the same uid."""
    from rsi_master.expos._identity import AgentIdentity, AgentLimits
    from rsi_master.expos._jail import JailSpec, client_paths, jail_argv

    uid = AGENT_UID_BASE + AGENT_UID_COUNT - 1
    as_uid = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", sys.executable, "-c", KEYRING]
    subprocess.run([*as_uid, "put"], check=True, timeout=60)
    assert subprocess.run([*as_uid, "get"], capture_output=True, text=True).stdout.strip() == "found"
    spec = JailSpec(
        identity=AgentIdentity(uid=uid, gid=uid, lock_fd=-1),
        limits=AgentLimits(),
        door_dir=place.sock.parent,
        hidden=(),
        clients=client_paths(),
    )
    argv, fds = jail_argv(spec, [sys.executable, "-c", KEYRING, "get"], "rsicap1.x.y")
    res = subprocess.run(argv, pass_fds=fds, capture_output=True, text=True, timeout=60)
    for fd in fds:
        os.close(fd)
    assert res.returncode == 0 and res.stdout.strip() == "empty", res.stderr


@pytest.mark.heavy
@needs_root
def test_the_agent_ends_when_the_run_ends(place):
    from rsi_master.expos import ExpOS
    from rsi_master.orchestra import ORCHESTRA

    run = place.base / "ending"
    assert _cli("init", "--task", "arithmetic", "--dir", str(run), env=_env()).returncode == 0
    agent = place.agent_popen(
        sys.executable, "-c", SLEEPER, node="w1", run=run, sock=place.base / "door-ending" / "d.sock"
    )
    try:
        uid = int(agent.stdout.readline())
        with ExpOS.open(run, key_dir=_KEYS[0]) as x:
            x.record(ORCHESTRA, "orchestra.finish", {"summary": "0" * 64, "final_score": 0.0})
        agent.wait(timeout=30)
        assert "the run has ended" in agent.stderr.read()
        assert _gone(uid, within=5)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        agent.stdout.close()
        agent.stderr.close()
