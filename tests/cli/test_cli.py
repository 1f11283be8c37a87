"""The operator CLI: exit codes, one-line errors, filters, and a light --help."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys

import pytest

from rsi_master.cli._main import main
from tests.helpers import make_run


@pytest.fixture
def run_dir(tmp_path):
    make_run(tmp_path / "run", events=9, checkpoint_every=4).close()
    return tmp_path / "run"


def test_verify_ok_and_summary(run_dir, capsys):
    assert main(["verify", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK: 9 events")
    assert "\n---\n" in out and "problems: 0" in out


def test_verify_names_the_first_bad_event(run_dir, capsys):
    conn = sqlite3.connect(run_dir / "ledger.db", isolation_level=None)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events_no_update'").fetchone()[0]
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute("UPDATE events SET body = replace(body, '\"i\":5', '\"i\":6') WHERE seq = 5")
    conn.execute(sql)
    conn.close()
    assert main(["verify", str(run_dir)]) == 1
    assert capsys.readouterr().out.startswith("FAILED: event 5: hash does not match")


@pytest.mark.parametrize(
    "setup,message",
    [
        (lambda p: None, "no such run directory"),
        (lambda p: p.mkdir(), "not an RSI-Master run directory"),
        (lambda p: p.write_text("x"), "not a directory"),
    ],
)
def test_bad_run_dirs_get_one_line_and_exit_2(tmp_path, capsys, setup, message):
    target = tmp_path / "target"
    setup(target)
    for cmd in ("verify", "log"):
        assert main([cmd, str(target)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_foreign_sqlite_file_and_wrong_key(run_dir, tmp_path, capsys):
    foreign = tmp_path / "foreign"
    shutil.copytree(run_dir, foreign)
    (foreign / "ledger.db").unlink()
    for extra in ("ledger.db-wal", "ledger.db-shm"):
        (foreign / extra).unlink(missing_ok=True)
    conn = sqlite3.connect(foreign / "ledger.db")
    conn.execute("CREATE TABLE stuff (x)")
    conn.commit()
    conn.close()
    assert main(["verify", str(foreign)]) == 2
    assert "not an RSI-Master ledger" in capsys.readouterr().err
    assert main(["checkpoint", str(run_dir), "--key-dir", str(tmp_path / "other-keys")]) == 2
    err = capsys.readouterr().err
    assert "no signing key for this run" in err and err.count("\n") == 1


def test_log_filters_and_json_lines(run_dir, capsys):
    assert main(["log", str(run_dir), "--kind", "test.*", "--since", "6", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [6, 7, 8]
    assert main(["log", str(run_dir), "--actor", "nobody"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[:2] == ["seq", "time"]
    assert main(["log", str(run_dir), "--limit", "2"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3


def test_checkpoint_export_then_verify_against_it(run_dir, tmp_path, capsys):
    out = tmp_path / "cp.json"
    assert main(["checkpoint", str(run_dir), "-o", str(out)]) == 0
    assert json.loads(out.read_text())["checkpoint"]["tree_size"] == 9
    assert main(["verify", str(run_dir), "--checkpoint", str(out)]) == 0


def test_demo_records_and_verifies(tmp_path, capsys):
    assert main(["demo", "--dir", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "verified: True" in out


def test_help_and_import_stay_light():
    code = (
        "import sys, contextlib, io\n"
        "import rsi_master\n"
        "from rsi_master.cli._main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: main(['--help'])\n"
        "    except SystemExit: pass\n"
        "heavy = [m for m in ('torch', 'transformers', 'trl', 'peft', 'openai', 'mcp', 'numpy', 'plotly') if m in sys.modules]\n"
        "ours = [m for m in sys.modules if m.startswith('rsi_master.') and not m.startswith('rsi_master.cli')]\n"
        "print(heavy, sorted(ours))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # `--help` reads the command table alone: no command's module, and of ours only what the
    # package and the error type need.
    assert out.strip() == "[] ['rsi_master.errors']", out


def test_each_command_parses_the_same_whether_its_module_is_loaded_alone_or_with_all():
    """`main` builds the parser with only the command's module imported (`lazy`); every command's
    help and options are the ones the whole parser has, in the table's order."""
    import argparse

    from rsi_master.cli._commands import COMMANDS
    from rsi_master.cli._main import build_parser

    def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return dict(sub.choices)

    whole = commands(build_parser())
    assert list(whole) == list(COMMANDS)
    modules = [c.module for c in COMMANDS.values()]
    for m in set(modules):  # a module registers its commands at once: they stand together
        at = [i for i, x in enumerate(modules) if x == m]
        assert at == list(range(at[0], at[-1] + 1)), m
    for name, (_module, help_line) in COMMANDS.items():
        alone = commands(build_parser(name, lazy=True))
        assert list(alone) == list(COMMANDS)
        assert alone[name].format_help() == whole[name].format_help(), name
        assert (whole[name].description or "").startswith(help_line), name
    top = build_parser(None, lazy=True).format_help()
    assert top == build_parser().format_help()


def test_init_with_an_unknown_task_is_one_line_and_writes_nothing(tmp_path, capsys):
    run_dir, keys = tmp_path / "run", tmp_path / "keys"
    assert main(["init", "--task", "nosuch", "--dir", str(run_dir), "--key-dir", str(keys)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "unknown task 'nosuch'" in err and "arithmetic" in err and "knowledge" in err
    assert not run_dir.exists() and not keys.exists()


def test_log_refuses_an_unknown_role_or_kind_and_lists_the_valid_ones(run_dir, capsys):
    for flags, words in (
        (["--role", "admin"], ["unknown role 'admin'", "worker", "harness"]),
        (["--kind", "nosuch"], ["unknown event kind 'nosuch'", "data.generate", "eval.record"]),
        (["--kind", "nosuch.*"], ["unknown event kind 'nosuch.*'"]),
        (["--kind", "%.*"], ["unknown event kind '%.*'"]),
        (["--kind", "data.*", "--kind", "evals.record", "--json"], ["'evals.record'"]),
    ):
        assert main(["log", str(run_dir), *flags]) == 2, flags
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1 and "Traceback" not in captured.err
        assert all(w in captured.err for w in words), (flags, captured.err)
    # Valid kinds and roles this run has no event of yet: nothing to show, and no error.
    for flags in (["--kind", "experiment.finish"], ["--kind", "orchestra.*"], ["--role", "reviewer"]):
        assert main(["log", str(run_dir), *flags, "--json"]) == 0, flags
        assert capsys.readouterr() == ("", "")
    # A kind the run holds is valid whatever wrote it (this test ledger's `test.event`).
    assert main(["log", str(run_dir), "--kind", "test.event", "--json"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 9


def test_a_cuda_device_without_cuda_is_one_line_before_anything_is_written(tmp_path, monkeypatch, capsys):
    """`--device cuda` or RSI_MASTER_DEVICE=cuda on a machine where torch sees no GPU: `run`,
    `init` and `door` stop at once, not in every Worker's training; a value that is no device too."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the refusal is for one without")
    monkeypatch.chdir(tmp_path)
    # Set through monkeypatch so that what `--device` writes into this process's environment is undone.
    monkeypatch.setenv("RSI_MASTER_DEVICE", "auto")
    attempts = [
        ["run", "--device", "cuda", "--budget", "60", "--dir", "r1"],
        ["init", "--task", "arithmetic", "--dir", "r2", "--device", "cuda"],
    ]
    for args in attempts:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "RSI_MASTER_DEVICE=cuda (--device cuda) but torch sees no CUDA device" in err
    monkeypatch.setenv("RSI_MASTER_DEVICE", "cuda")
    assert main(["run", "--budget", "60", "--dir", "r3"]) == 2
    assert "sees no CUDA device" in capsys.readouterr().err
    with make_run(tmp_path / "served"):
        pass
    assert main(["door", str(tmp_path / "served"), "--socket", str(tmp_path / "d.sock")]) == 2
    assert "sees no CUDA device" in capsys.readouterr().err and not (tmp_path / "d.sock").exists()
    monkeypatch.setenv("RSI_MASTER_DEVICE", "gpu")
    assert main(["init", "--task", "arithmetic", "--dir", "r4"]) == 2
    assert "must be auto, cpu or cuda, got 'gpu'" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["served"]


@pytest.mark.slow
def test_ctrl_c_on_a_run_is_one_line_naming_resume_and_stops_its_slots(tmp_path):
    """Ctrl-C reaches every process of the run (the terminal's process group). The slot processes
    ignore it; the scheduler asks each to finalize (SIGTERM) and kills what is left after the
    grace, so the command ends promptly (before, a slot that took the interrupt inside a lazy
    import trained on, and the interrupted command waited at exit for its hours of allowance),
    with no KeyboardInterrupt traceback and one line that says how to continue."""
    import os
    import signal
    import time

    from rsi_master.orchestra._scheduler import TERM_GRACE_S

    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(tmp_path / "keys")}
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rsi_master.cli", "run", "--budget", "10h", "--dir", str(run)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 240
        while time.time() < deadline and b"experiment.start" not in _ledger_bytes(run):
            time.sleep(1)
        os.killpg(proc.pid, signal.SIGINT)
        t0 = time.time()
        _, err = proc.communicate(timeout=120)
        took = time.time() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err[-3000:]
    assert took < TERM_GRACE_S + 30, took
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == f"rsi-master: interrupted; `rsi-master resume {run}` continues the run"
    out = subprocess.run(
        [sys.executable, "-m", "rsi_master.cli", "log", str(run), "--kind", "orchestra.job.end", "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    ended = [json.loads(line)["payload"] for line in out.stdout.splitlines()]
    assert sorted(e["node"] for e in ended) == ["w1", "w2"], out.stdout + out.stderr
    assert {e["status"] for e in ended} <= {"stopped", "killed"}, ended


def _ledger_bytes(run) -> bytes:
    """The ledger's bytes so far, its write-ahead log included (SQLite keeps event kinds as text)."""
    out = b""
    for name in ("ledger.db", "ledger.db-wal"):
        path = run / name
        out += path.read_bytes() if path.exists() else b""
    return out


@pytest.mark.heavy
def test_ctrl_c_on_a_simulated_bench_is_one_line_and_the_same_command_continues_it(tmp_path):
    """Ctrl-C while a simulated campaign's node holds the simulated clock (the scheduler's thread
    waits for its turn): the scheduler takes the next turn to stop the nodes, so the command ends
    with one line, not a traceback about the clock that hides the interrupt; the same command
    then resumes the interrupted campaign and finishes the bench with a run that verifies."""
    import os
    import signal
    import time

    from rsi_master.rundir import verify_run

    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(tmp_path / "keys")}
    out = tmp_path / "bench"
    cmd = [sys.executable, "-m", "rsi_master.cli", "bench", "--backend", "sim", "--configs", "rsi-master"]
    cmd += ["--world-seeds", "100:1", "--seeds", "1", "--budget", "3h", "--jobs", "1", "--no-plot", "--out", str(out)]
    run = out / "campaigns" / "rsi-master--L100--s0" / "run"
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and _ledger_bytes(run).count(b"experiment.finish") < 8:
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == "rsi-master: interrupted; the same command continues the bench"
    assert not (run.parent / "stats.json").exists()
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (run.parent / "stats.json").is_file() and "campaigns: 1" in again.stdout
    assert verify_run(run, key_dir=tmp_path / "keys").problems == []
