"""Whole runs on real tasks (slow): the acceptance criteria of `rsi-master run` and `resume`.

    .venv/bin/python -m pytest -m slow tests/orchestra

RSI_MASTER_TEST_BUDGET sets the budget of the default-run test (default: the task's own,
`default_budget`: 5m, 10m for function calling), for slower machines; the defaults of
`rsi-master run` are what it exercises otherwise.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from rsi_master.expos import ExpOS, audit, load_state
from rsi_master.orchestra import RunSpec, load_graph, start_run
from rsi_master.rundir import verify_run

pytestmark = pytest.mark.slow


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("task", ["arithmetic", "knowledge", "function_calling", "program_synthesis"])
def test_default_run_improves_on_the_base_with_a_reviewed_research_graph(tmp_path, task):
    budget = os.environ.get("RSI_MASTER_TEST_BUDGET")  # None: the task's default budget
    summary = start_run(RunSpec(task=task, budget=budget, run_dir=tmp_path / "run"))
    assert summary["final_score"] > summary["base_score"], summary
    with ExpOS.open(tmp_path / "run", writable=False) as expos:
        g = load_graph(expos.reader)
        actions = Counter(d.action for d in g.decisions)
        assert actions["branch"] >= 1 and actions["revise"] >= 1, actions
        assert any(r.done and r.cross_worker for r in g.reviewers.values())
        report = audit(expos)
        assert report.flagged == [] and report.hacking_rate == 0.0
        # final was scored once per subject, never used to select
        subjects = [e.payload["subject"] for e in expos.events("harness.final")]
        assert sorted(subjects) == ["base", "selected"]
        assert expos.events("harness.select")[0].seq < min(e.seq for e in expos.events("harness.final"))
        # Every event of a default run is its kind's model, and re-dumps to the bytes written.
        from rsi_master.events import dump_payload, typed
        from rsi_master.ledger import canonical_bytes

        for e in expos.run.ledger.events():
            assert canonical_bytes(dump_payload(typed(e).payload)) == canonical_bytes(e.payload), (e.seq, e.kind)
    assert verify_run(tmp_path / "run").ok
    assert summary["slot_utilisation"] > 0.5


def _cli(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("rsi-master")), *args]


def _check_no_loss_no_repeat(run_dir: Path) -> None:
    assert verify_run(run_dir).ok, verify_run(run_dir).problems[:3]
    with ExpOS.open(run_dir, writable=False) as expos:
        finishes = Counter(e.payload["experiment_id"] for e in expos.events("experiment.finish"))
        assert all(n == 1 for n in finishes.values()), finishes
        st = load_state(expos.reader)
        g = load_graph(expos.reader)
        # Every experiment either finished or is recorded as interrupted, never silently dropped.
        for x in st.experiments.values():
            assert x.status != "running" or x.id in g.interrupted_experiments, x.id
        # No experiment was run twice: same parent, data and training spec.
        keys = Counter((x.parent, x.dataset, json.dumps(x.spec, sort_keys=True)) for x in st.experiments.values())
        assert all(n == 1 for n in keys.values())
        assert g.finished is not None


def load_interrupted(run_dir: Path) -> set[str]:
    with ExpOS.open(run_dir, writable=False) as expos:
        return load_graph(expos.reader).interrupted_experiments


def _finished(run_dir) -> bool:
    with ExpOS.open(run_dir, writable=False) as expos:
        return load_graph(expos.reader).finished is not None


@pytest.mark.timeout(7200)
def test_sigkill_at_random_moments_then_resume(tmp_path):
    rng = random.Random(1234)
    killed_mid_experiment = 0
    # Long enough for Workers to start experiments (so that kills land mid-experiment too),
    # evaluation sets small so that ten trials stay affordable.
    env = {**os.environ, "RSI_MASTER_EVAL_LIMIT": "5"}
    for trial in range(10):
        run_dir = tmp_path / f"run{trial}"
        cmd = _cli("run", "--task", "arithmetic", "--budget", "120s", "--seed", str(trial), "--dir", str(run_dir))
        kills = 0
        while True:
            proc = subprocess.Popen(
                cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
            )
            delay = rng.uniform(1.0, 150.0) if kills < 2 else 10_000
            try:
                out, _ = proc.communicate(timeout=delay)
                assert proc.returncode == 0, out.decode()[-2000:]
                break
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.communicate()
                kills += 1
                time.sleep(0.5)
                if not (run_dir / "ledger.db").exists():  # killed before the run existed
                    continue
                if _finished(run_dir):
                    # Killed after `orchestra.finish`, its last record (summary stored): the
                    # run is complete, and `resume` rightly refuses it ("already finished").
                    break
                cmd = _cli("resume", str(run_dir))
        if (run_dir / "ledger.db").exists():
            _check_no_loss_no_repeat(run_dir)
            killed_mid_experiment += bool(load_interrupted(run_dir))
    # The test has teeth only if some kills interrupted an experiment.
    assert killed_mid_experiment >= 1
