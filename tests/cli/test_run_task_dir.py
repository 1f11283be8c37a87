"""End to end: `rsi-master run --model DIR --task DIR --budget 90s` on a test-size Qwen2 model
built here (tests/hf_model.py) and a task directory per scorer kind, then `verify` and `audit`
clean; and `rsi-master tasks check`, whose bad input is one line with nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import tiny_hf_model
from tests.tasks.dir.helpers import make_task_dir


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rsi_master.cli", *args], capture_output=True, text=True, timeout=600, env=env, cwd=cwd
    )


def _summary(stdout: str) -> dict[str, str]:
    tail = stdout.split("\n---\n")[-1]
    return dict(line.split(": ", 1) for line in tail.splitlines() if ": " in line)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return tiny_hf_model(tmp_path_factory.mktemp("models"), "qwen2")


@pytest.mark.parametrize("kind", ["numeric", "multiple_choice", "unit_tests"])
def test_run_on_a_task_directory_verifies_and_audits_clean(kind: str, model: Path, tmp_path: Path) -> None:
    task_dir = make_task_dir(tmp_path / "task", kind, n=6, train=8)
    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(tmp_path / "keys"), "OMP_NUM_THREADS": "1"}
    run = _cli(
        "run", "--model", str(model), "--task", str(task_dir), "--budget", "90s", "--dir", "run", env=env, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr[-2000:]
    summary = _summary(run.stdout)
    assert summary["task"] == kind.replace("_", "-")
    assert float(summary["base_score"]) >= 0.0 and summary["final_score"] != "n/a"
    verify = _cli("verify", "run", env=env, cwd=tmp_path)
    assert verify.returncode == 0 and "problems: 0" in verify.stdout, verify.stdout + verify.stderr
    audit = _cli("audit", "run", env=env, cwd=tmp_path)
    assert audit.returncode == 0 and "flagged: none" in audit.stdout, audit.stdout + audit.stderr
    # The run scored the directory's items with its scorer, from the sealed copy.
    contract = json.loads(
        _cli("log", "run", "--kind", "contract.freeze", "--json", env=env, cwd=tmp_path).stdout.splitlines()[0]
    )["payload"]
    assert contract["task_source"]["scorer"] == kind and contract["base_model_source"]["architecture"] == "qwen2"
    assert contract["evaluator"]["sample_ids"]["final"] == [f"f-{i}" for i in range(6)]


def test_tasks_check(tmp_path: Path) -> None:
    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(tmp_path / "keys")}
    good = make_task_dir(tmp_path / "good", "function_call", train=2)
    out = _cli("tasks", "check", str(good), env=env, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.startswith("ok: function-call (") and "train 2" in out.stdout
    bad = make_task_dir(tmp_path / "bad", "numeric")
    (bad / "task.toml").write_text((bad / "task.toml").read_text() + "extra = 1\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    for args in (("tasks", "check", str(bad)), ("run", "--task", str(bad), "--budget", "10s")):
        out = _cli(*args, env=env, cwd=tmp_path)
        assert out.returncode != 0 and "unknown field 'scorer.extra'" in out.stderr and "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written (no runs/, no keys)
