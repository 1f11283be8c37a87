"""The scheduler with a tiny budget and Workers that only sleep: slots, budget, stop."""

from __future__ import annotations

import time

import pytest

from rsi_master.orchestra import PlainDisplay, Scheduler, load_graph, run_metrics
from rsi_master.orchestra._graph import ORCHESTRA
from rsi_master.rundir import verify_run

from .helpers import MAIN, new_run


@pytest.mark.heavy
def test_slots_fill_the_budget_then_stop_cleanly(tmp_path, capsys):
    with new_run(tmp_path, budget_s=8.0, slots=2, main="tests.orchestra.helpers:FillMain") as expos:
        sched = Scheduler(expos, PlainDisplay(), poll_s=0.1)
        t0 = time.time()
        sched.start()
        reason = sched.drive()
        took = time.time() - t0
        assert reason == "budget spent"
        g = load_graph(expos.reader)
        assert g.open_jobs() == [] and g.stopped is not None
        assert took < 8.0 + sched.grace_s + 5
        slots_used = {j.slot for j in g.jobs}
        assert slots_used == {0, 1}
        # Never more jobs at once than slots.
        for j in g.jobs:
            overlap = [
                k for k in g.jobs if k.slot == j.slot and k is not j and k.start_ts < j.end_ts and j.start_ts < k.end_ts
            ]
            assert not overlap
        assert all(w.done for w in g.workers.values() if any(j.node == w.id for j in g.jobs))
        m = run_metrics(expos.reader, g)
        assert 0.0 < m["slot_utilisation"] <= 1.0
        assert sum(sum(f.values()) for f in m["tool_calls_by_fifth"]) > 0
        assert m["tool_calls_by_fifth"][0]["deciding"] >= 1
        # About eighty polls, and the slot processes' events among them: each event was read once.
        proj = expos.projection()
        assert proj.rows_read == proj.size == expos.run.ledger.size()
    assert verify_run(tmp_path / "run").ok
    assert "start worker" in capsys.readouterr().out


def test_a_node_that_crashes_twice_is_abandoned(tmp_path):
    with new_run(tmp_path, budget_s=60.0, slots=1, main="tests.orchestra.helpers:CrashMain") as expos:
        sched = Scheduler(expos, PlainDisplay(), poll_s=0.1)
        sched.start()
        reason = sched.drive()
        assert reason == "no work left"
        g = load_graph(expos.reader)
        assert [j.status for j in g.jobs] == ["failed", "failed"]
        assert [e.payload["node"] for e in expos.events("orchestra.abandon")] == ["s1"]


def test_resume_does_not_count_the_downtime_and_closes_open_jobs(tmp_path):
    with new_run(tmp_path, budget_s=100.0, main="tests.orchestra.helpers:FillMain") as expos:
        expos.call(MAIN, "worker.add", {"worker_id": "s1", "task": "t", "direction": {"family": "answer_only"}})
        expos.record(ORCHESTRA, "orchestra.job.start", {"node": "s1", "kind": "worker", "slot": 0})
        before = load_graph(expos.reader).spent_seconds()
        time.sleep(1.5)  # the run is "dead" here
        sched = Scheduler(expos, PlainDisplay(), poll_s=0.1)
        sched.resume()
        assert abs(sched.spent_before - before) < 1e-6
        g = load_graph(expos.reader)
        assert g.open_jobs() == [] and [j.status for j in g.jobs] == ["interrupted"]
        assert len(g.sessions) == 2
        assert g.spent_seconds(now=g.sessions[1][1]) < before + 0.5
