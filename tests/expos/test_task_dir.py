"""A run on a task directory (`--task DIR`): the contract pins the directory's files, the run's
task is the sealed copy made at freeze, and an agent that edits the directory or the sealed copy
afterwards changes nothing that is scored (attacks made from a subprocess, as an agent would)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rsi_master.expos import ExpOS, sealed_evaluation
from rsi_master.runtime import EvaluatorDigestError
from tests.expos.test_redteam import agent
from tests.helpers import capability_file
from tests.tasks.dir.helpers import make_task_dir, write_jsonl

# An agent rewrites a file it can reach (a stored one is read-only: it makes it writable first).
_OVERWRITE = """
import os, sys
path, text = sys.argv[1], sys.argv[2]
os.chmod(os.path.dirname(path), 0o755)
if os.path.exists(path):
    os.chmod(path, 0o644)
    os.unlink(path)
open(path, 'w').write(text)
"""
_ALWAYS_RIGHT = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\ndef score(item, output):\n    return 1.0\n"


@pytest.fixture
def task_run(tmp_path, monkeypatch):
    monkeypatch.setenv("RSI_MASTER_KEY_DIR", str(tmp_path / "keys"))
    task_dir = make_task_dir(tmp_path / "task", "python", name="own-task", train=3)
    # Review items long enough for the contamination gate (it does not claim items of a few words).
    story = "sold clips to {} of her friends in April, and then she sold half as many clips in May"
    write_jsonl(
        task_dir / "review.jsonl",
        [{"id": f"r-{i}", "question": f"Natalia {story.format(40 + i)}", "answer": f"yes{i}"} for i in range(4)],
    )
    x = ExpOS.create(tmp_path / "run", str(task_dir), eval_limit=4, allowed_teachers=["hand-written"])
    yield x, task_dir
    x.close()


def test_contract_pins_the_task_files_and_the_seal_holds_them(task_run) -> None:
    x, task_dir = task_run
    c = x.contract
    assert c.task == "own-task" and c.task_source is not None
    assert sorted(c.task_source.files) == [
        "dev.jsonl",
        "final.jsonl",
        "review.jsonl",
        "scorer.py",
        "task.toml",
        "train.jsonl",
    ]
    assert c.task_source.scorer == "python" and c.task_source.train_items == 3
    assert c.evaluator.sample_ids["final"] == ["f-0", "f-1", "f-2", "f-3"]
    sealed = x.sealed_evaluator() / "task"
    assert (sealed / "scorer.py").read_bytes() == (task_dir / "scorer.py").read_bytes()
    assert x.protected_task().digest == c.task_source.digest and x.seal_problems() == []
    # A built-in task's contract has no task_source at all (absent, not null).
    with ExpOS.create(x.run.path.parent / "builtin", "arithmetic", eval_limit=4) as y:
        assert y.contract.task_source is None
        assert "task_source" not in json.dumps(next(y.run.ledger.events(limit=1)).payload)


@pytest.mark.heavy
def test_editing_the_task_directory_after_freeze_changes_nothing(task_run, tmp_path) -> None:
    x, task_dir = task_run
    before = sealed_evaluation(x, x.contract.base_model_artifact, "dev")
    assert before.score < 1.0  # the shipped model does not say "yes0".."yes3"
    marker = tmp_path / "scorer-ran"
    agent(_OVERWRITE, task_dir / "scorer.py", _ALWAYS_RIGHT.format(marker=str(marker)))
    rows = "".join(json.dumps({"id": f"d-{i}", "question": "q", "answer": "a"}) + "\n" for i in range(4))
    agent(_OVERWRITE, task_dir / "dev.jsonl", rows)
    x.close()
    with ExpOS.open(x.run.path) as y:
        after = sealed_evaluation(y, y.contract.base_model_artifact, "dev")
        assert after.score == before.score and after.prompts_digest == before.prompts_digest
        assert y.protected_task().digest == y.contract.task_source.digest
        assert y.task.digest == y.contract.task_source.digest  # the session holds the sealed copy
    assert not marker.exists()


def test_an_edited_sealed_copy_is_refused_and_never_run(task_run, tmp_path) -> None:
    x, _ = task_run
    marker = tmp_path / "scorer-ran"
    stored = x.sealed_evaluator() / "task" / "scorer.py"
    agent(_OVERWRITE, stored, _ALWAYS_RIGHT.format(marker=str(marker)))
    x.close()
    with ExpOS.open(x.run.path) as y:
        problems = y.seal_problems()
        assert problems and "not the pinned" in problems[0], problems
        with pytest.raises(EvaluatorDigestError):
            sealed_evaluation(y, y.contract.base_model_artifact, "dev")
    assert not marker.exists()  # checked before a byte of it was run, in any process
    verify = subprocess.run(
        [sys.executable, "-m", "rsi_master.cli", "verify", str(x.run.path)], capture_output=True, text=True, timeout=300
    )
    assert verify.returncode != 0 or "problems: 0" not in verify.stdout, verify.stdout


def _register(path: Path, capability: str, rows: list[dict]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "rsi_master.cli._expos",
            "--run",
            str(path),
            "--capability-file",
            capability_file(capability),
            "data.register",
            "-",
        ],
        input=json.dumps({"source": "hand-written", "rows": rows}),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.heavy
def test_protected_items_of_a_task_directory_are_refused_at_registration(task_run) -> None:
    x, _ = task_run
    w1 = x.issue("worker", "w1")
    item = x.protected_task().eval_items("review")[2]
    pool = x.protected_task().train_pool()
    x.close()
    clean = [{"prompt": p.prompt, "completion": p.reference["answer"]} for p in pool]
    assert _register(x.run.path, w1, clean).returncode == 0
    leaked = _register(x.run.path, w1, [*clean, {"prompt": item.prompt, "completion": " yes2"}])
    assert leaked.returncode != 0 and "overlaps protected evaluation items" in leaked.stderr


def _unit_tests_task(tmp_path, monkeypatch) -> Path:
    """A unit-test task whose `dev` item's tests take longer than the evaluator's default per-item
    limit (5 s) and whose `final` item's tests fail."""
    monkeypatch.setenv("RSI_MASTER_KEY_DIR", str(tmp_path / "keys"))
    root = make_task_dir(tmp_path / "task", "unit_tests", extra_toml="", stop=("\n",))
    toml = (root / "task.toml").read_text().replace("timeout_s = 3.0", 'timeout_s = 9.0\nprefix_field = "solution"')
    (root / "task.toml").write_text(toml)
    # The model's one-line output lands in a comment after the reference solution.
    rows = [
        {"id": f"{s}-0", "question": f"{s} x + 1", "solution": "def f(x):\n    return x + 1\n# ", "tests": slow}
        for s, slow in (
            ("d", "import time\ntime.sleep(6)\nassert f(2) == 3"),
            ("r", "assert f(2) == 3"),
            ("f", "assert f(2) == 4"),
        )
    ]
    for split, row in zip(("dev", "review", "final"), rows):
        write_jsonl(root / f"{split}.jsonl", [row])
    return root


@pytest.mark.heavy
def test_unit_tests_run_in_the_sealed_evaluator_with_their_own_time_limit(tmp_path, monkeypatch) -> None:
    """A right answer passes through the whole path (seal, private copy, sandbox), even when its
    tests take longer than the evaluator's default per-item limit (5 s)."""
    with ExpOS.create(tmp_path / "run", str(_unit_tests_task(tmp_path, monkeypatch))) as x:
        dev = sealed_evaluation(x, x.contract.base_model_artifact, "dev")
    assert dev.score == 1.0, dev.samples[0].reason


def test_a_failing_unit_test_in_the_sealed_evaluator_is_a_zero_with_its_reason(tmp_path, monkeypatch) -> None:
    with ExpOS.create(tmp_path / "run", str(_unit_tests_task(tmp_path, monkeypatch))) as x:
        final = sealed_evaluation(x, x.contract.base_model_artifact, "final")
    assert final.score == 0.0 and "AssertionError" in final.samples[0].reason
