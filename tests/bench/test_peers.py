"""ASHA and Hyperband Workers against scripted tool results (no training): rungs continue
from their own checkpoints, the pruner stops trials, and the Workers of a run share one study."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rsi_master.bench._peers import ASHAWorker, HyperbandWorker, resource_bounds
from rsi_master.orchestra import Direction
from tests.orchestra.helpers import new_run
from tests.orchestra.test_worker import ScriptedCtx, _ctx


class StepCtx(ScriptedCtx):
    """Dev score rises with the learning rate and with the lineage's steps (more training helps)."""

    def call(self, tool, args=None):
        args = args or {}
        if tool != "experiment.submit":
            return super().call(tool, args)
        self.log.append((tool, args))
        steps = int(args["config"]["max_steps"])
        before = self.steps_of.get(args["parent"], 0)
        xid = f"exp-{len(self.log):05d}"
        self.steps_of[xid] = before + steps
        score = round(min(1.0, args["config"]["learning_rate"] * 100 + (before + steps) / 10_000), 6)
        self.rows.append(
            SimpleNamespace(
                experiment_id=xid,
                owner=self.caller.id,
                parent=args["parent"],
                config=args["config"],
                status="completed",
                dev_score=score,
            )
        )
        res = {"experiment_id": xid, "status": "completed", "dev_score": score, "steps": steps}
        return SimpleNamespace(model_dump=lambda: res)


def _run(expos, cls, worker="w1", trials=12, seed=0):
    ctx = _ctx(expos, Direction(family="answer_only", trials=trials, seed=seed))
    ctx.caller = type(ctx.caller)("worker", worker)
    ctx.__class__ = StepCtx
    ctx.steps_of = {"base": 0}
    cls().run(ctx)
    return ctx


def _chains(ctx):
    """Each trial's experiments, in order: a chain starts at `base`."""
    subs = [(a["parent"], a["config"]["max_steps"]) for t, a in ctx.log if t == "experiment.submit"]
    ids = [r.experiment_id for r in ctx.rows]
    chains: list[list[tuple[str, int]]] = []
    for (parent, steps), xid in zip(subs, ids, strict=True):
        if parent == "base":
            chains.append([])
        else:
            assert chains and chains[-1][-1][0] == parent, "a rung continues from the trial's previous rung"
        chains[-1].append((xid, steps))
    return chains


@pytest.mark.parametrize("cls", [ASHAWorker, HyperbandWorker])
def test_rungs_continue_from_their_checkpoint_and_the_pruner_stops_trials(tmp_path, cls):
    lo, hi = resource_bounds()
    with new_run(tmp_path) as expos:
        ctx = _run(expos, cls)
        chains = _chains(ctx)
        assert len(chains) == 12  # one chain per asked configuration
        rungs = cls()._rungs()
        cum = [sum(s for _, s in c) for c in chains]
        assert all(0 < s <= hi for s in cum)
        # The contract caps an experiment at 400 steps: longer rungs take several experiments.
        assert all(s <= 400 for c in chains for _, s in c)
        # every trial stopped at a rung (pruned there) or went all the way
        assert all(s in rungs for s in cum), (cum, rungs)
        assert min(cum) == lo and max(cum) > lo  # some were pruned at the first rung, some promoted
        assert sum(s == lo for s in cum) >= 4  # most stop at the first rung (Hyperband: its first brackets)
        # TPE's and random's searched space has no step count: the steps are the resource
        gens = [a for t, a in ctx.log if t == "data.generate"]
        assert len({g["seed"] for g in gens}) == len(gens)  # fresh rows for every rung
        assert ctx.final["claims"][0]["score"] == max(r.dev_score for r in ctx.rows)


def test_workers_of_a_run_share_one_study(tmp_path):
    import optuna

    with new_run(tmp_path) as expos:
        _run(expos, ASHAWorker, "w1", trials=4)
        _run(expos, ASHAWorker, "w2", trials=4, seed=31)
        path = expos.run.path / "scratch" / "optuna-union-asha.journal"
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(path)))
        study = optuna.load_study(study_name="union-asha", storage=storage)
        assert len(study.trials) == 8
        states = {t.state.name for t in study.trials}
        assert states <= {"COMPLETE", "PRUNED"} and "PRUNED" in states
        # each trial reported at its rungs, with the cumulative steps as the step index
        assert all(set(t.intermediate_values) <= set(ASHAWorker()._rungs()) for t in study.trials)


def test_a_worker_out_of_time_stops_without_starting_an_experiment(tmp_path):
    with new_run(tmp_path) as expos:
        ctx = _ctx(expos, Direction(family="answer_only", trials=5), seconds=0.05)
        ASHAWorker().run(ctx)
        assert not [t for t, _ in ctx.log if t == "experiment.submit"]
        assert ctx.final["claims"] == []


def test_a_simulated_runs_workers_share_an_in_process_study():
    """A simulated run's Workers are threads of one process: one in-memory storage per run
    (by its journal path), kept for the few latest runs only."""
    from rsi_master.bench._workers import _IN_PROCESS_RUNS, _in_process_storage

    a = _in_process_storage("/runs/a/scratch/optuna-union-asha.journal")
    assert _in_process_storage("/runs/a/scratch/optuna-union-asha.journal") is a
    assert _in_process_storage("/runs/b/scratch/optuna-union-asha.journal") is not a
    for i in range(_IN_PROCESS_RUNS):
        _in_process_storage(f"/runs/later-{i}")
    assert _in_process_storage("/runs/a/scratch/optuna-union-asha.journal") is not a  # evicted
