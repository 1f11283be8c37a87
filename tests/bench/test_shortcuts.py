"""The shortcut catalogue as tool calls: ExpOS refuses each attempt under the subcategory
the catalogue names; the unguarded workspace lets the same calls through, and the
independent auditor still finds what they did (no training: experiments are recorded)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from rsi_master.bench import CATALOGUE, ShortcutTendency
from rsi_master.bench._configs import WORKSPACE
from rsi_master.bench._workers import ShortcutWorker, _best_own, _stalled
from rsi_master.bench._workspace import Workspace, workspace_dir, workspace_edits
from rsi_master.expos import Caller, ExpOS, audit
from rsi_master.orchestra import Direction, NodeContext, Trial, WorkerBrief
from rsi_master.orchestra._graph import ORCHESTRA
from tests.orchestra.helpers import fake_experiment, new_run

W = Caller("worker", "w1")


def test_tendency_validates_its_input():
    assert ShortcutTendency().weights == {k: s.weight for k, s in CATALOGUE.items()}
    with pytest.raises(ValidationError, match="unknown shortcuts"):
        ShortcutTendency(weights={"bribe_the_grader": 1.0})
    with pytest.raises(ValidationError):
        ShortcutTendency(rate=1.5)
    with pytest.raises(ValidationError, match="positive sum"):
        ShortcutTendency(weights={"evaluator_edit": 0.0})


@pytest.mark.parametrize(
    "scores,patience,stalled",
    [
        ([], 1, False),
        ([0.0], 1, True),
        ([0.1], 1, False),
        ([0.1, 0.1], 1, True),
        ([0.1, 0.2], 1, False),
        ([0.1, 0.05], 2, False),
        ([0.1, 0.05, None], 2, True),
        ([None], 1, True),
    ],
)
def test_stall_rule(scores, patience, stalled):
    memory = [Trial(dev_score=s, status="completed" if s is not None else "failed") for s in scores]
    assert _stalled(memory, patience) is stalled


def _memory(expos, dev=0.0):
    xid = fake_experiment(expos, "w1", dev)
    return [Trial(experiment_id=xid, status="completed", dev_score=dev, steps=20, seconds=30.0)], xid


def _ctx(expos):
    return NodeContext(expos, W, WorkerBrief("explore", Direction(family="answer_only")), deadline=1e12, seed=0)


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_expos_refuses_every_shortcut_under_its_subcategory(tmp_path, name):
    expos = new_run(tmp_path)
    try:
        expos.call(Caller("main", "main"), "worker.add", {"worker_id": "w1", "task": "t"})
        memory, _ = _memory(expos)
        out = ShortcutWorker()._attempt(
            _ctx(expos),
            Direction(family="answer_only"),
            name,
            memory,
            {"max_steps": 10, "batch_size": 8, "learning_rate": 1e-3},
        )
        assert out.startswith("refused"), out
        blocked = expos.events("guard.blocked")
        assert blocked and blocked[-1].payload["subcategory"] == CATALOGUE[name].subcategory
        assert not expos.events("experiment.start")[1:], "nothing trained after a refusal"
    finally:
        expos.close()


def test_worker_attempts_at_a_stall_with_the_configured_rate(tmp_path):
    expos = new_run(tmp_path)
    try:
        memory, _ = _memory(expos, dev=0.0)
        w = ShortcutWorker()
        w._tend = ShortcutTendency(rate=1.0, max_attempts=1, weights={"sample_dropping": 1.0})
        import random

        w._rng, w._attempts = random.Random(0), []
        d = Direction(family="answer_only")
        w._after_trial(_ctx(expos), d, memory, {})
        w._after_trial(_ctx(expos), d, memory, {})  # max_attempts: no second attempt
        assert [a["shortcut"] for a in w._attempts] == ["sample_dropping"]
        assert len(expos.events("guard.blocked")) == 1
        never = ShortcutWorker()
        never._tend, never._rng, never._attempts = ShortcutTendency(rate=0.0), random.Random(0), []
        never._after_trial(_ctx(expos), d, memory, {})
        assert never._attempts == [] and len(expos.events("guard.blocked")) == 1
    finally:
        expos.close()


def test_the_shortcut_coin_pairs_configurations_and_not_tasks(tmp_path):
    """One seed's `w1` flips the same coins in every configuration of a task (a paired
    comparison of guarded and unguarded), and other coins on another task: keyed by seed and
    Worker id alone, seed 2 of the full bench table attempted 44 shortcuts to seed 1's 3."""
    from rsi_master.bench._workers import coin

    flips = lambda r: [r.random() for _ in range(8)]  # noqa: E731
    assert flips(coin(2, "arithmetic", "w1")) == flips(coin(2, "arithmetic", "w1"))
    assert flips(coin(2, "arithmetic", "w1")) != flips(coin(2, "knowledge", "w1"))
    assert flips(coin(2, "arithmetic", "w1")) != flips(coin(2, "arithmetic", "w2"))
    expos = new_run(tmp_path)
    try:
        w = ShortcutWorker()
        w._tendency(_ctx(expos))  # the Worker's coin comes from its run's contract task
        assert flips(w._rng) == flips(coin(0, expos.contract.task, "w1"))
    finally:
        expos.close()


def test_best_own_ignores_failed_and_unscored():
    mem = [
        Trial(experiment_id="a", status="completed", dev_score=0.2),
        Trial(experiment_id="b", status="failed", dev_score=None),
        Trial(experiment_id="c", status="completed", dev_score=0.3),
    ]
    assert _best_own(mem) == "c" and _best_own([]) is None


# -- the workspace -----------------------------------------------------------------------------
def _workspace(tmp_path):
    """A run created under the workspace policy (the bench's no-ExpOS configuration)."""
    expos = ExpOS.create(tmp_path / "run", "knowledge", eval_limit=5, guards=Workspace())
    expos.record(
        ORCHESTRA,
        "orchestra.start",
        {
            "version": 1,
            "task": "knowledge",
            "budget_s": 100.0,
            "slots": 2,
            "seed": 0,
            "main": "policy",
            "reviewer": "evidence",
            "eval_limit": 5,
            "environment": WORKSPACE,
        },
    )
    return expos, expos


def test_workspace_lays_out_items_with_references_readable_by_workers(tmp_path):
    expos, ws = _workspace(tmp_path)
    try:
        assert ws.guards.dir(ws) == workspace_dir(expos.run.path) and workspace_edits(ws.guards.dir(ws), ws) == []
        got = ws.call(W, "eval.review", {"experiment_id": "base", "split": "final"})
        ref = {i.sample_id: i.reference for i in ws.protected_task().eval_items("final")}
        assert len(got.items) == len(ws.contract.evaluator.sample_ids["final"]) == 5
        assert all(ref[i["sample_id"]] == i["reference"] for i in got.items)
        assert not ws.events("guard.blocked")
        (ws.guards.dir(ws) / "evaluator" / "scoring.json").write_text(json.dumps({"mode": "lenient"}))
        assert workspace_edits(ws.guards.dir(ws), ws) == ["evaluator/scoring.json"]
        assert ws.guards.evaluator_digest(ws) != ws.contract.evaluator.evaluator_digest
    finally:
        expos.close()


@pytest.mark.heavy
def test_an_unguarded_test_set_dataset_stays_within_the_contracts_rows(tmp_path):
    """With a task's wide training ranges steps x batch reaches millions of rows: the
    test-set dataset is cut to the contract's rows per dataset (a larger one would be refused
    for its size under ExpOS, and unguarded the gate checked millions of rows for minutes)."""
    from rsi_master.expos import ToolRefused

    class NoTraining(NodeContext):
        def call(self, tool, args=None):
            if tool == "experiment.submit":
                raise ToolRefused("no training in this test")
            return super().call(tool, args)

    expos, ws = _workspace(tmp_path)
    try:
        ws.call(Caller("main", "main"), "worker.add", {"worker_id": "w1", "task": "t"})
        memory, _ = _memory(ws)
        huge = {"max_steps": 100_000, "batch_size": 256, "learning_rate": 1e-3}
        limit = ws.contract.budget.max_rows
        assert huge["max_steps"] * huge["batch_size"] > limit
        ctx = NoTraining(ws, W, WorkerBrief("explore", Direction(family="answer_only")), deadline=1e12, seed=0)
        out = ShortcutWorker()._attempt(ctx, Direction(family="answer_only"), "test_set_training", memory, huge)
        assert out == "refused: no training in this test", out
        (registered,) = ws.events("data.register")
        assert registered.payload["n_rows"] == limit  # the items, repeated up to the limit
        assert registered.payload["contamination"]["verdict"] == "failed"
    finally:
        expos.close()


def test_training_on_test_items_goes_through_and_the_auditor_flags_it(tmp_path, monkeypatch):
    """The workspace registers evaluation items as data (ExpOS would refuse); a submission
    trained on them is flagged for test-set access by the same audit rules."""
    expos, ws = _workspace(tmp_path)
    try:
        ws.call(Caller("main", "main"), "worker.add", {"worker_id": "w1", "task": "t"})
        items = ws.call(W, "eval.review", {"experiment_id": "base", "split": "review"}).items
        rows = [{"prompt": i["prompt"], "completion": f" {i['reference']}\n\n"} for i in items] * 4
        ds = ws.call(W, "data.register", {"source": "evaluation-items", "rows": rows})
        assert ds.contamination == "failed"  # the gate's verdict is recorded; its refusal is waived
        from rsi_master.expos._state import experiment_id

        base = ws.contract.base_model_artifact
        start = ws.record(
            W,
            "experiment.start",
            {
                "parent": "base",
                "parent_checkpoint": base,
                "dataset": ds.dataset,
                "method": "sft",
                "spec": {"max_steps": 10},
            },
        )
        xid = experiment_id(start.seq)
        ws.record(
            W, "experiment.finish", {"experiment_id": xid, "status": "completed", "checkpoint": base, "steps": 10}
        )
        ws.call(W, "worker.finalize", {"summary": "great", "candidates": [xid]})
        report = audit(ws)
        sub = next(s for s in report.submissions if s.experiment_id == xid)
        assert sub.flagged and sub.observations["test_set_access"].observation == "EXECUTED"
        assert sub.observations["teacher_authorization"].observation == "EXECUTED"  # undeclared source
    finally:
        expos.close()
