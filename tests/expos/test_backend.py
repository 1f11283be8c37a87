"""The experiment backend seam under ExpOS: a simulated run trains and evaluates through the same
door, gates and records as a real one; its stand-in checkpoints and its sealed world are
attacked from another process like real weights and a real evaluator."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rsi_master.artifacts import dir_digest
from rsi_master.expos import Budget, ExpOS, ToolRefused, audit
from rsi_master.expos._contamination_gate import check_rows
from rsi_master.runtime import SIM_CHECKPOINT_FILE, read_sim_checkpoint
from rsi_master.sim import generate_world

TRAIN = {"learning_rate": 3e-4, "batch_size": 16, "max_steps": 400}


@pytest.fixture
def sim_run(tmp_path):
    land = generate_world(5)
    x = ExpOS.create(tmp_path / "run", land.task_name, world=land, budget=Budget(max_train_steps=3000))
    yield x, land
    x.close()


def _experiment(x, w, family, seed=1):
    ds = x.call(w, "data.generate", {"family": family, "n": x.contract.budget.max_rows, "seed": seed})
    return x.call(w, "experiment.submit", {"parent": "base", "dataset": ds.dataset, "method": "sft", "config": TRAIN})


def test_a_simulated_run_trains_and_evaluates_through_the_door(sim_run):
    x, land = sim_run
    c = x.contract
    assert c.simulation is not None and c.simulation.landscape_ident == land.ident
    assert c.task == land.task_name and x.backend.name == "sim" and x.backend.executor == "inline"
    assert c.budget.max_rows == Budget().max_rows // c.simulation.examples_per_row
    assert c.budget.max_rows * c.simulation.examples_per_row == Budget().max_rows  # the cap, in examples
    w = x.authenticate(x.issue("worker", "w1"))
    res = _experiment(x, w, next(iter(land.families())))
    assert res.status == "completed" and res.dev_score is not None
    path = x.run.store.path(res.checkpoint)
    ckpt, digest = read_sim_checkpoint(path)
    assert digest == res.checkpoint == dir_digest(path)  # a real digest of the stand-in checkpoint
    expected = land.evaluate(ckpt, "dev", len(c.evaluator.sample_ids["dev"])) / len(c.evaluator.sample_ids["dev"])
    assert res.dev_score == pytest.approx(expected)
    report = audit(x)
    assert report.flagged == [] and report.run_dir_issues == []


def test_the_real_gate_catches_protected_items_in_synthetic_rows(sim_run):
    x, _land = sim_run
    task = x.protected_task()
    family = next(iter(task.generators().values()))
    rows = family.generate({}, 3, 50)
    assert check_rows(task, rows)["verdict"] == "clean"
    item = task.eval_items("final")[7]
    leaked = [*rows, {"prompt": item.prompt, "completion": f" {item.reference}\n", "check": rows[0]["check"]}]
    assert check_rows(task, leaked)["verdict"] == "failed"


def _attack(script: str) -> None:
    subprocess.run([sys.executable, "-c", script], check=True, env={**os.environ})


def test_a_stand_in_checkpoint_edited_from_another_process_is_refused_and_flagged(sim_run):
    x, land = sim_run
    w = x.authenticate(x.issue("worker", "w1"))
    res = _experiment(x, w, next(iter(land.families())))
    target = x.run.store.path(res.checkpoint) / SIM_CHECKPOINT_FILE
    state = json.loads(target.read_text())
    state["progress"] = {k: v * 100 for k, v in state["progress"].items()}  # a better model, same name
    _attack(
        f"import os, pathlib; p = pathlib.Path({str(target)!r}).resolve(); os.chmod(p, 0o644); "
        f"p.write_text({json.dumps(state)!r})"
    )
    r = x.authenticate(x.issue("reviewer", "r1"))
    with pytest.raises(ToolRefused, match="changed on disk"):
        x.call(r, "eval.review", {"experiment_id": res.experiment_id})
    report = audit(x)
    assert any("sim_checkpoint.json" in i and "modified" in i for i in report.run_dir_issues)
    assert report.blocked_by_subcategory.get("weight_provenance") == 1


def test_an_edited_sealed_world_scores_nothing(sim_run):
    x, land = sim_run
    w = x.authenticate(x.issue("worker", "w1"))
    res = _experiment(x, w, next(iter(land.families())))
    seal = x.run.store.path(x.contract.evaluator.evaluator_artifact) / "landscape.json"
    text = seal.read_text().replace('"base":', '"base": 0.9, "was":', 1)
    _attack(
        f"import os, pathlib; p = pathlib.Path({str(seal)!r}).resolve(); os.chmod(p, 0o644); p.write_text({text!r})"
    )
    r = x.authenticate(x.issue("reviewer", "r1"))
    with pytest.raises(ToolRefused, match="sealed evaluator"):
        x.call(r, "eval.review", {"experiment_id": res.experiment_id})


def test_a_checkpoint_edited_between_two_audits_is_flagged_by_the_second(sim_run, monkeypatch):
    """An audit remembers what it measured (in this process); an edit that keeps the size and
    puts the mtime back must still be seen by the next one."""
    import time

    from rsi_master.artifacts import _digests

    monkeypatch.setattr(_digests, "SETTLED_NS", 50_000_000)  # files settle in 50 ms, not 2 s
    x, land = sim_run
    w = x.authenticate(x.issue("worker", "w1"))
    res = _experiment(x, w, next(iter(land.families())))
    time.sleep(0.1)
    assert audit(x).run_dir_issues == []
    assert audit(x).run_dir_issues == []  # from what the first one measured
    target = (x.run.store.path(res.checkpoint) / SIM_CHECKPOINT_FILE).resolve()
    text = target.read_text()
    digit = next(i for i, ch in enumerate(text) if ch in "12345678")
    edited = text[:digit] + str(int(text[digit]) + 1) + text[digit + 1 :]
    _attack(
        f"import os; p = {str(target)!r}; st = os.stat(p); os.chmod(p, 0o644); "
        f"open(p, 'r+').write({edited!r}); os.chmod(p, st.st_mode); "
        "os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))"
    )
    assert os.path.getsize(target) == len(text.encode())
    report = audit(x)
    assert any("sim_checkpoint.json" in i and "modified" in i for i in report.run_dir_issues), report.run_dir_issues


def test_experiments_leave_no_scratch_and_dropping_scratch_never_follows_links(sim_run, tmp_path):
    x, land = sim_run
    w = x.authenticate(x.issue("worker", "w1"))
    assert _experiment(x, w, next(iter(land.families()))).status == "completed"
    assert list((x.run.path / "scratch").iterdir()) == []  # the moved outputs' empty directories went too
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not scratch")
    tmp = x.scratch()
    (tmp / "out" / "deep").mkdir(parents=True)
    (tmp / "out" / "deep" / "left.bin").write_bytes(b"x")
    (tmp / "link").symlink_to(outside, target_is_directory=True)
    x.drop_scratch(tmp)
    assert not tmp.exists() and (outside / "keep.txt").read_text() == "not scratch"
