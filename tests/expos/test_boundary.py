"""The trust boundary, attacked from a shell with the agent's privileges.

As root, `rsi-master agent` runs the agent's command under a uid of its own, in namespaces of
its own, behind the door. The attacks below run inside that command, as a Python script: each must be
refused by the operating system (the run and key directories are the harness's alone) or by
the door (capabilities), while honest calls through the door work and are recorded with the
capability that acted.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import rsi_master
from rsi_master.events import DoorRefusals, typed
from rsi_master.expos import ExpOS
from rsi_master.expos._identity import AGENT_UID_BASE, AGENT_UID_COUNT
from tests.helpers import capability_file

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a second OS user needs root (CI runs as root)")

ATTACKS = r"""
import json, os, sqlite3, socket, subprocess, sys
run, keys, peer = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "succeeded"
    except (OSError, sqlite3.Error) as exc:
        out[name] = "denied: " + type(exc).__name__
def ledger_write():
    c = sqlite3.connect(f"file:{run}/ledger.db?mode=rw", uri=True)
    c.execute("INSERT INTO meta VALUES ('x', 'y')")
    c.commit()
attempt("read a world-readable control file", lambda: open(sys.argv[4]).read())
attempt("open the ledger database and write a forged row", ledger_write)
attempt("read the ledger database", lambda: open(f"{run}/ledger.db", "rb").read(1))
attempt("list the artifact store", lambda: os.listdir(f"{run}/artifacts"))
attempt("replace the run's public key", lambda: open(f"{run}/ledger.pub", "wb").write(b"x"))
attempt("read the operator's signing key", lambda: os.listdir(keys))
attempt("read the capability secrets", lambda: os.listdir(f"{keys}/caps"))
attempt("read the witnesses", lambda: os.listdir(f"{keys}/witness"))
attempt("read the harness's environment", lambda: open(f"/proc/{peer}/environ", "rb").read())
attempt("read the harness's memory map", lambda: open(f"/proc/{peer}/maps").read())
def fake_door():
    s = socket.socket(socket.AF_UNIX); s.bind(os.environ["EXPOS_DOOR"] + ".fake")
attempt("put a fake door beside the real one", fake_door)
def rollback():
    import shutil; shutil.copy(f"{run}/ledger.db", "/tmp/x.db")
attempt("copy the ledger out to roll it back later", rollback)
def honest():
    r = subprocess.run(["expos", "--json", "quota.show"], capture_output=True, text=True)
    if r.returncode: raise OSError(r.stderr)
attempt("an honest call through the door", honest)
def declared(role):
    r = subprocess.run(["expos", "--role", role, "graph.read"], capture_output=True, text=True)
    if r.returncode: raise OSError(r.stderr.strip())
attempt("declare --role main", lambda: declared("main"))
def reviewer_tool():
    r = subprocess.run(["expos", "eval.review", '{"experiment_id": "exp-00001"}'], capture_output=True, text=True)
    if r.returncode: raise OSError(r.stderr.strip())
attempt("call a reviewer tool with a worker capability", reviewer_tool)
def widened():
    import base64
    tok = open(os.environ["EXPOS_CAPABILITY_FILE"]).read().strip(); _, body, mac = tok.split(".")
    raw = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))); raw["role"] = "main"
    b = base64.urlsafe_b64encode(json.dumps(raw, sort_keys=True, separators=(",", ":")).encode()).rstrip(b"=").decode()
    with open(os.path.expanduser("~/forged"), "w") as fh: fh.write(f"rsicap1.{b}.{mac}")
    r = subprocess.run(["expos", "--capability-file", os.path.expanduser("~/forged"), "graph.read"],
                       capture_output=True, text=True)
    if r.returncode: raise OSError(r.stderr.strip())
attempt("widen its own capability to main", widened)
def operator_mode():
    r = subprocess.run(["expos", "--run", run, "quota.show"], capture_output=True, text=True,
                       env={**os.environ, "EXPOS_DOOR": ""})
    if r.returncode: raise OSError(r.stderr.strip())
attempt("open the run directly as the operator would", operator_mode)
print(json.dumps(out))
"""


def _open_for_traversal(paths: list[Path]) -> list[tuple[Path, int]]:
    """Directories on the way to these paths that others cannot traverse, opened (o+x) for the test."""
    changed = []
    for path in paths:
        for d in reversed(path.parents):
            mode = d.stat().st_mode
            if not mode & stat.S_IXOTH:
                os.chmod(d, mode | stat.S_IXOTH)
                changed.append((d, mode))
    return changed


@pytest.fixture
def agent_python():
    """The agent user runs `expos` on this Python and this checkout: let it reach them (restored after)."""
    changed = _open_for_traversal([Path(os.path.realpath(sys.executable)), Path(rsi_master.__file__).resolve()])
    yield
    for d, mode in reversed(changed):
        os.chmod(d, mode)


@pytest.fixture
def open_place(monkeypatch):
    """A world-traversable place, so that only the boundary (not a private pytest tmp dir) protects the
    run; outside /tmp, which an agent sees as its own empty tmpfs."""
    base = Path(tempfile.mkdtemp(prefix="rsi-boundary-", dir="/var/lib" if os.geteuid() == 0 else None))
    os.chmod(base, 0o755)
    monkeypatch.setenv("RSI_MASTER_KEY_DIR", str(base / "keys"))
    yield base
    subprocess.run(["rm", "-rf", str(base)], check=False)


@pytest.mark.heavy
@needs_root
def test_an_agent_with_a_shell_reaches_the_run_only_through_the_door(open_place):
    """Also the fresh-clone case: this Python may live under /root (0700); nothing is opened for the agent."""
    run = open_place / "run"
    control = open_place / "control.txt"
    control.write_text("readable by anyone")
    os.chmod(control, 0o644)
    init = subprocess.run(
        [sys.executable, "-m", "rsi_master.cli", "init", "--task", "arithmetic", "--dir", str(run)],
        capture_output=True,
        text=True,
    )
    assert init.returncode == 0, init.stderr
    script = open_place / "attacks.py"
    script.write_text(ATTACKS)
    os.chmod(script, 0o644)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "rsi_master.cli",
            "agent",
            str(run),
            "--role",
            "worker",
            "--id",
            "w1",
            "--socket",
            str(open_place / "door" / "d.sock"),
            "--",
            sys.executable,
            str(script),
            str(run),
            str(open_place / "keys"),
            str(os.getpid()),
            str(control),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert "os-user" in res.stderr and "uid of its own" in res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    allowed = {"read a world-readable control file", "an honest call through the door"}
    assert {k for k, v in out.items() if v == "succeeded"} == allowed, out
    assert all(v.startswith("denied") for k, v in out.items() if k not in allowed)
    with ExpOS.open(run, writable=False) as x:
        calls = x.events("tool.call")
        assert [(e.actor.role, e.actor.id) for e in calls] == [("worker", "w1")]
        assert calls[0].actor.cap is not None
        blocked = x.events("guard.blocked")
        assert {e.actor.id for e in blocked} == {"w1"}
        # The widened capability is counted in the door's window for the agent's uid, not recorded alone.
        (window,) = [typed(e, DoorRefusals).payload for e in x.own_events("door.refusals")]
        assert window.refusal == "unauthenticated" and window.count >= 1
        # The agent's own uid (one per agent), never the harness's.
        assert AGENT_UID_BASE <= window.peer_uid < AGENT_UID_BASE + AGENT_UID_COUNT
    assert stat.S_IMODE(run.stat().st_mode) == 0o700 and run.stat().st_uid == 0
    assert stat.S_IMODE((open_place / "keys").stat().st_mode) == 0o700


def test_agent_command_errors_are_one_line(open_place):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "rsi_master.cli",
            "agent",
            str(open_place / "nope"),
            "--role",
            "worker",
            "--id",
            "w1",
            "--",
            "true",
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "no such run directory" in res.stderr
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "rsi_master.cli",
            "capability",
            str(open_place / "nope"),
            "--role",
            "harness",
            "--id",
            "h",
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and "invalid choice: 'harness'" in res.stderr


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "rsi_master.cli", *args], capture_output=True, text=True, **kw)


def _expos(*args):
    return subprocess.run([sys.executable, "-m", "rsi_master.cli._expos", *args], capture_output=True, text=True)


@pytest.mark.heavy
def test_a_door_serves_several_agents_and_outlives_them(tmp_path):
    run, sock = tmp_path / "run", tmp_path / "doors" / "d.sock"
    assert _cli("init", "--task", "arithmetic", "--dir", str(run)).returncode == 0
    w1 = _cli("capability", str(run), "--role", "worker", "--id", "w1").stdout.strip()
    m = _cli("capability", str(run), "--role", "main", "--id", "main", "--ttl", "10m").stdout.strip()
    door = subprocess.Popen(
        [sys.executable, "-m", "rsi_master.cli", "door", str(run), "--socket", str(sock)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "serving" in door.stderr.readline()
        assert _expos("--door", str(sock), "--capability-file", capability_file(w1), "quota.show").returncode == 0
        assert _expos("--door", str(sock), "--capability-file", capability_file(m), "graph.read").returncode == 0
        refused = _expos("--door", str(sock), "--capability-file", capability_file(w1), "graph.read")
        assert refused.returncode == 3 and "may not call graph.read" in refused.stderr
        second = _cli("door", str(run), "--socket", str(sock))
        assert second.returncode == 2 and "already serving" in second.stderr
        assert door.poll() is None
    finally:
        door.terminate()
        door.wait(timeout=30)
        door.stderr.close()
    assert door.returncode == 0  # a TERM ends the door cleanly: its sessions close and sign the ledger
    gone = _expos("--door", str(sock), "--capability-file", capability_file(w1), "quota.show")
    assert gone.returncode == 5 and "cannot reach the ExpOS door" in gone.stderr
    from rsi_master.rundir import verify_run

    assert verify_run(run).ok
    with ExpOS.open(run, writable=False) as x:
        assert [(e.actor.id, e.payload["tool"]) for e in x.events("tool.call")] == [
            ("w1", "quota.show"),
            ("main", "graph.read"),
        ]
        assert len({e.actor.cap for e in x.events("tool.call")}) == 2


@pytest.mark.heavy
@needs_root
def test_the_embedded_default_works_for_a_non_root_user_and_says_what_holds(agent_python, open_place):
    """Without root there is no second user to drop agents to: the commands work and say so."""
    from rsi_master.expos._identity import AGENT_UID_BASE

    uid = AGENT_UID_BASE - 1  # an unprivileged uid no agent is given
    home = open_place / "home"
    home.mkdir()
    os.chown(home, uid, uid)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "RSI_MASTER_KEY_DIR": str(home / "keys"),
    }
    as_user = {"user": uid, "group": uid, "extra_groups": [], "env": env, "cwd": home}
    run = home / "run"
    assert _cli("init", "--task", "arithmetic", "--dir", str(run), **as_user).returncode == 0
    token = _cli("capability", str(run), "--role", "worker", "--id", "w1", **as_user).stdout.strip()
    agent = _cli(
        "agent",
        str(run),
        "--role",
        "worker",
        "--id",
        "w1",
        "--socket",
        str(home / "d.sock"),
        "--",
        "expos",
        "quota.show",
        **as_user,
    )
    assert agent.returncode == 0 and "experiments_left" in agent.stdout, agent.stderr
    assert f"same-user (uid {uid})" in agent.stderr and "rest on detection" in agent.stderr
    assert token.startswith("rsicap1.")
    assert _cli("verify", str(run), **as_user).returncode == 0
    assert run.stat().st_uid == uid
