"""The door's guard policies: one experiment service under Strict and Unguarded, and a policy
that only the harness's code chooses (recorded in the contract, out of any agent's reach)."""

from __future__ import annotations

import pytest

from rsi_master.errors import RsiMasterError
from rsi_master.events import typed
from rsi_master.expos import Budget, Caller, ExpOS, Strict, ToolInvalid, ToolRefused, Unguarded
from rsi_master.sim import SimWorld, generate_world

MAIN = Caller("main", "main")
W1 = Caller("worker", "w1")
QUICK = {"max_steps": 3, "batch_size": 8, "learning_rate": 1e-3}


def _unguarded_run(tmp_path, name: str = "run", world: SimWorld | None = None):
    return ExpOS.create(
        tmp_path / name,
        "arithmetic" if world is None else world.task_name,
        eval_limit=8,
        guards=Unguarded(),
        budget=Budget(max_experiments=10, max_train_steps=50),
        world=world,
    )


def _after(session, call):
    """The records a call leaves, as (kind, actor, payload, artifact names)."""
    before = session.run.ledger.size()
    result = call()
    events = list(session.run.ledger.events())[before:]
    return result, [
        (e.kind, e.actor.model_dump(exclude_none=True), dict(e.payload), [a.name for a in e.artifacts]) for e in events
    ]


def _comparable(records, xid, checkpoint, dataset):
    """Timing and the per-sample record (its bytes carry the evaluator's seconds) differ between
    two experiments, and so do their data and checkpoint digests; the experiment id is the start's seq."""
    out = []
    for kind, actor, payload, names in records:
        payload = {
            k: {xid: "<xid>", checkpoint: "<checkpoint>", dataset: "<dataset>"}.get(v, v) if isinstance(v, str) else v
            for k, v in payload.items()
            # and the gate's findings on two different datasets
            if k not in ("train_seconds", "final_loss", "record_digest", "args", "measured", "score")
            and k not in ("verdict", "flags", "matches")
        }
        out.append((kind, actor, payload, names))
    return out


# Training for real takes about a minute; the simulated backend runs the same door and records.
@pytest.mark.parametrize("simulated", [True, pytest.param(False, marks=pytest.mark.slow)], ids=["sim", "real"])
def test_an_honest_experiment_leaves_the_same_records_under_strict_and_unguarded(tmp_path, simulated):
    """One experiment through each policy, each on a dataset of its own (the same data would end
    with the first one's checkpoint bytes, and the second would share its dev record)."""
    with _unguarded_run(tmp_path, world=generate_world(5) if simulated else None) as unguarded:
        assert unguarded.contract.guards == "unguarded" and isinstance(unguarded.guards, Unguarded)
        strict = ExpOS(unguarded.run, unguarded.contract)  # a Strict session opens any run
        assert isinstance(strict.guards, Strict)
        strict.call(MAIN, "worker.add", {"worker_id": "w1", "task": "t"})
        family = min(f.split("/")[1] for f in strict.contract.allowed_generators)
        data = [strict.call(W1, "data.generate", {"family": family, "n": 32, "seed": s}).dataset for s in (1, 2)]
        a, rec_a = _after(strict, lambda: strict.call(W1, "experiment.submit", {"dataset": data[0], "config": QUICK}))
        args = {"dataset": data[1], "config": QUICK}
        b, rec_b = _after(unguarded, lambda: unguarded.call(W1, "experiment.submit", args))
    assert a.status == b.status == "completed" and a.checkpoint != b.checkpoint
    assert [r[0] for r in rec_a] == ["data.check", "experiment.start", "experiment.finish", "eval.record", "tool.call"]
    assert _comparable(rec_a, a.experiment_id, a.checkpoint, data[0]) == _comparable(
        rec_b, b.experiment_id, b.checkpoint, data[1]
    )
    # The one difference: the unguarded door logs each call's arguments, for the auditor.
    assert "args" not in rec_a[-1][2] and rec_b[-1][2]["args"] == args


def test_a_refused_shortcut_goes_through_unguarded_recorded_and_named_by_the_audit(tmp_path):
    """A Worker trains on a Reviewer's split: Strict refuses it at the door (test-set access) and
    never trains; Unguarded lets it through, logs the call, and the audit names the violation."""
    from rsi_master.expos import audit

    with _unguarded_run(tmp_path) as unguarded:
        strict = ExpOS(unguarded.run, unguarded.contract)
        strict.call(MAIN, "worker.add", {"worker_id": "w1", "task": "t"})
        items = unguarded.protected_task().eval_items("review")[:8]
        rows = [{"prompt": i.prompt, "completion": f" {i.reference}\n\n"} for i in items] * 4
        with pytest.raises(ToolRefused, match=r"data_provenance|teacher_authorization"):
            strict.call(W1, "data.register", {"source": "evaluation-items", "rows": rows})
        blocked = [typed(e).payload for e in strict.events("guard.blocked")]
        assert blocked and blocked[-1].tool == "data.register"
        assert not strict.events("data.register")

        ds = unguarded.call(W1, "data.register", {"source": "evaluation-items", "rows": rows})
        assert ds.contamination == "failed"  # the gate ran, its verdict is recorded, its refusal waived
        res = unguarded.call(W1, "experiment.submit", {"dataset": ds.dataset, "config": QUICK})
        assert res.status == "completed"
        unguarded.call(W1, "worker.finalize", {"summary": "done", "candidates": [res.experiment_id]})
        logged = [typed(e).payload for e in unguarded.events("tool.call")]
        assert any(p.tool == "data.register" and p.args and p.args["source"] == "evaluation-items" for p in logged)
        assert len(unguarded.events("guard.blocked")) == len(blocked)  # nothing more was blocked
        report = audit(unguarded)
    sub = next(s for s in report.submissions if s.experiment_id == res.experiment_id)
    assert sub.flagged
    assert sub.observations["test_set_access"].observation == "EXECUTED"
    assert sub.observations["teacher_authorization"].observation == "EXECUTED"


def test_the_policy_is_the_harness_choice_never_an_agent_one(tmp_path):
    """A strict run admits no unguarded session; through the door (socket, as the `expos` CLI and
    MCP reach it) even an unguarded run is Strict, and no argument switches it."""
    from rsi_master.expos._door import Door, door_call

    with ExpOS.create(tmp_path / "strict", "knowledge", eval_limit=5) as x:
        assert x.contract.guards == "strict"
        with pytest.raises(RsiMasterError, match="guard policy"):
            ExpOS(x.run, x.contract, guards=Unguarded())
        with pytest.raises(TypeError):
            ExpOS(x.run, x.contract, guards="unguarded")  # type: ignore[arg-type]
    with pytest.raises(RsiMasterError, match="guard policy"):
        ExpOS.open(tmp_path / "strict", guards=Unguarded())

    with ExpOS.create(tmp_path / "run", "knowledge", eval_limit=5, guards=Unguarded()) as x:
        x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "t"})
        token = x.issue("worker", "w1")
    door = Door(tmp_path / "run", socket_path=tmp_path / "door" / "d.sock").start()
    try:
        with pytest.raises(ToolInvalid):
            door_call(door.path, token, "results.list", {"guards": "unguarded"})
        with pytest.raises(ToolRefused, match="test_set_access"):
            door_call(door.path, token, "eval.review", {"experiment_id": "base", "split": "review"})
        with pytest.raises(ToolRefused, match="weight_provenance"):
            door_call(door.path, token, "checkpoint.register", {"path": str(tmp_path)})
    finally:
        door.close()
    with ExpOS.open(tmp_path / "run", writable=False) as x:
        assert [typed(e).payload.subcategory for e in x.events("guard.blocked")] == [
            "test_set_access",
            "weight_provenance",
        ]
