from __future__ import annotations

import pytest

from rsi_master.events import Claim
from rsi_master.expos import Added, Caller, GraphView
from rsi_master.orchestra import Direction, MainContext, NodeContext, load_graph
from rsi_master.orchestra._briefs import reviewer_brief, worker_brief
from rsi_master.orchestra._graph import ORCHESTRA

from .helpers import MAIN, fake_experiment, finalize, new_run


def _add(expos, wid, preds=(), family="answer_only"):
    return expos.call(
        MAIN,
        "worker.add",
        {
            "worker_id": wid,
            "task": f"explore {family}",
            "direction": Direction(family=family).model_dump(mode="json"),
            "predecessors": list(preds),
        },
    ).seq


def test_graph_nodes_edges_and_pending_come_from_the_ledger(tmp_path):
    with new_run(tmp_path) as expos:
        _add(expos, "w1")
        _add(expos, "w2", family="chain_then_answer")
        _add(expos, "w3", preds=["w1", "w2"])
        expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q?", "scope": ["w1", "w2"]})
        g = load_graph(expos.reader)
        assert set(g.workers) == {"w1", "w2", "w3"}
        assert g.workers["w3"].predecessors == ["w1", "w2"]
        assert sorted(g.edges()) == sorted(
            [("w1", "w3", "context"), ("w2", "w3", "context"), ("w1", "r1", "scope"), ("w2", "r1", "scope")]
        )
        assert g.pending() == [("worker", "w1"), ("worker", "w2"), ("worker", "w3"), ("reviewer", "r1")]
        assert g.reviewers["r1"].cross_worker

        xid = fake_experiment(expos, "w1", 0.4)
        fseq = finalize(expos, "w1", xid, 0.4)
        g = load_graph(expos.reader)
        assert g.workers["w1"].done and g.workers["w1"].finalize_seq == fseq
        assert ("worker", "w1") not in g.pending()
        assert g.orchestration_events() == [(fseq, "finalize", "w1")]
        assert g.handled_events() == set()
        expos.call(
            MAIN,
            "decision.record",
            {"action": "continue", "rationale": "r", "evidence": [fseq], "detail": {}, "answers": fseq},
        )
        assert load_graph(expos.reader).handled_events() == {fseq}


def test_budget_counts_sessions_and_jobs_per_direction(tmp_path):
    with new_run(tmp_path) as expos:
        _add(expos, "w1")
        job = expos.record(ORCHESTRA, "orchestra.job.start", {"node": "w1", "kind": "worker", "slot": 0})
        g = load_graph(expos.reader)
        start = g.sessions[0][1]
        assert abs(g.spent_seconds(now=start + 12.5) - 12.5) < 1e-6
        expos.record(
            ORCHESTRA,
            "orchestra.job.end",
            {
                "start_seq": job.seq,
                "node": "w1",
                "status": "done",
                "end_ts": load_graph(expos.reader).jobs[0].start_ts + 7.0,
                "seconds": 7.0,
            },
        )
        g = load_graph(expos.reader)
        assert g.open_jobs() == []
        assert abs(g.direction_seconds()["answer_only:sft"] - 7.0) < 1e-6
        # A second session: the first counts up to its last event, the gap between them does not.
        last = g.last_ts
        expos.record(ORCHESTRA, "orchestra.resume", {"slots": 2})
        g = load_graph(expos.reader)
        assert len(g.sessions) == 2
        assert abs(g.spent_seconds(now=g.sessions[1][1] + 3.0) - (last - start + 3.0)) < 1e-6


def test_verified_keys_need_a_passing_cross_worker_review(tmp_path):
    with new_run(tmp_path) as expos:
        _add(expos, "w1")
        _add(expos, "w2", family="chain_then_answer")
        for rid, scope, verdict in (("r1", ["w1"], "pass"), ("r2", ["w1", "w2"], "fail")):
            expos.call(MAIN, "review.request", {"reviewer_id": rid, "question": "q", "scope": scope})
            expos.call(Caller("reviewer", rid), "review.submit", {"scope": scope, "verdict": verdict})
        assert load_graph(expos.reader).verified_keys() == set()
        expos.call(MAIN, "review.request", {"reviewer_id": "r3", "question": "q", "scope": ["w1", "w2"]})
        expos.call(Caller("reviewer", "r3"), "review.submit", {"scope": ["w1", "w2"], "verdict": "pass"})
        assert load_graph(expos.reader).verified_keys() == {"answer_only:sft", "chain_then_answer:sft"}


def test_a_node_s_brief_is_built_from_the_graph(tmp_path):
    with new_run(tmp_path) as expos:
        _add(expos, "w1")
        _add(expos, "w2", preds=["w1"], family="chain_then_answer")
        xid = fake_experiment(expos, "w1", 0.4)
        done = finalize(expos, "w1", xid, 0.4)
        asked = expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q?", "scope": ["w1", "w2"]}).seq
        g = load_graph(expos.reader)
        wb = worker_brief(g, "w2", {"step_s": 0.1})
        assert (wb.task, wb.predecessors, wb.timing) == ("explore chain_then_answer", ["w1"], {"step_s": 0.1})
        assert wb.direction == g.workers["w2"].direction and wb.direction is not g.workers["w2"].direction
        rb = reviewer_brief(g, "r1")
        assert (rb.question, rb.scope, rb.seq, list(rb.conclusions)) == ("q?", ["w1", "w2"], asked, ["w1"])
        c = rb.conclusions["w1"]  # w2 has not finalized: nothing of it to check
        assert (c.seq, c.claims, c.candidates) == (done, [Claim(experiment_id=xid, score=0.4)], [xid])
        # What an LLM Reviewer reads: the keys its prompt has always had.
        assert c.as_json() == {
            "seq": done,
            "claims": [{"experiment_id": xid, "score": 0.4}],
            "candidates": [xid],
            "summary": f"best {xid}",
        }


def test_call_as_checks_the_result_type(tmp_path):
    with new_run(tmp_path) as expos:
        main = MainContext(expos, MAIN, 300.0, lambda: 0.0, 1)
        assert isinstance(main.call_as(GraphView, "graph.read"), GraphView)
        _add(expos, "w1")
        node = NodeContext(expos, Caller("worker", "w1"), worker_brief(load_graph(expos.reader), "w1"), deadline=1e12)
        with pytest.raises(TypeError, match=r"contract\.show returned ContractView, not Added"):
            node.call_as(Added, "contract.show")


def test_direction_key_names_mixed_families():
    d = Direction(family="a", mix=[{"family": "c"}, {"family": "b"}])
    assert d.key() == "a+b+c:sft"
    assert Direction(family="a", method="lora").key() == "a:lora"
