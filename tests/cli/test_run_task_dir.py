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


KINDS = ("numeric", "multiple_choice", "unit_tests")


@pytest.mark.slow
def test_runs_on_task_directories_verify_and_audit_clean(model: Path, tmp_path: Path) -> None:
    """One run per scorer kind, the three at once (each takes its whole 90 s budget, wall-clock:
    side by side they cost CI 90 s instead of 270 s), one slot each."""
    _run_verify_audit(model, tmp_path, KINDS, "90s")


def _run_verify_audit(model: Path, tmp_path: Path, kinds: tuple[str, ...], budget: str) -> None:
    runs = {}
    for kind in kinds:
        root = tmp_path / kind
        task_dir = make_task_dir(root / "task", kind, n=6, train=8)
        env = {**os.environ, "RSI_MASTER_KEY_DIR": str(root / "keys"), "OMP_NUM_THREADS": "1"}
        args = ["run", "--model", str(model), "--task", str(task_dir), "--budget", budget, "--slots", "1"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "rsi_master.cli", *args, "--dir", "run"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=root,
        )
        runs[kind] = (proc, env, root)
    # Every run is waited for (and its pipes closed) before any assertion, so that one failing
    # run does not leave the others' pipes to be collected during a later test.
    outputs = {kind: proc.communicate(timeout=600) for kind, (proc, _, _) in runs.items()}
    for kind, (proc, env, root) in runs.items():
        stdout, stderr = outputs[kind]
        summary = _summary(stdout)
        assert summary["task"] == kind.replace("_", "-")
        # A checkpoint returned (exit 0), or none and the summary says why (exit 3): never a score
        # printed for a model that was not returned.
        if proc.returncode == 0:
            assert float(summary["final_score"]) >= 0.0 and summary["selected"] != "n/a", stdout[-2000:]
            assert (Path(summary["selected_model"]) / "config.json").exists(), summary  # the model returned
        else:
            assert proc.returncode == 3 and summary["final_score"] == "n/a" and summary["why"], stderr[-2000:]
        assert float(summary["base_score"]) >= 0.0
        # The train pool gave the Main directions (no hand-written generator); whether a trial
        # fits a 90 s budget depends on the machine's load, so only the directions are checked.
        assert int(summary["workers"]) >= 1, stdout[-2000:]
        # Where model output ran is in the summary's trust line, only for a scorer that runs it.
        assert ("; model output: " in summary["trust_boundary"]) == (kind == "unit_tests"), summary
        verify = _cli("verify", "run", env=env, cwd=root)
        assert verify.returncode == 0 and "problems: 0" in verify.stdout, verify.stdout + verify.stderr
        audit = _cli("audit", "run", env=env, cwd=root)
        assert audit.returncode == 0 and "flagged: none" in audit.stdout, audit.stdout + audit.stderr
        # The run scored the directory's items with its scorer, from the sealed copy.
        contract = json.loads(
            _cli("log", "run", "--kind", "contract.freeze", "--json", env=env, cwd=root).stdout.splitlines()[0]
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


def test_tasks_check_and_init_refuse_alike(tmp_path: Path) -> None:
    """`tasks check` passes exactly what a run accepts: a protected item repeated in another
    split with only a trailing space added, and a task named like a built-in one, are one line
    from both, with nothing written."""
    from tests.tasks.dir.helpers import write_jsonl

    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(tmp_path / "keys")}
    spaced = make_task_dir(tmp_path / "spaced", "numeric")
    write_jsonl(spaced / "final.jsonl", [{"id": "x", "question": "What is 1 plus 2? ", "answer": "3"}])
    builtin = make_task_dir(tmp_path / "named", "numeric", name="knowledge")
    before = sorted(p.name for p in tmp_path.iterdir())
    for task, message in ((spaced, "the same item as 'd-1' of the dev split"), (builtin, "is a built-in task's")):
        for args in (("tasks", "check", str(task)), ("init", "--task", str(task), "--dir", "run")):
            out = _cli(*args, env=env, cwd=tmp_path)
            assert out.returncode != 0 and message in out.stderr, (args, out.stderr)
            assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
