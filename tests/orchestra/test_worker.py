"""The TPE Worker's loop against scripted tool results (no training)."""

from __future__ import annotations

import time
from dataclasses import replace
from types import SimpleNamespace

from rsi_master.events import Recipe
from rsi_master.orchestra import Direction, NodeContext, Range, TPEWorker, Trial, WorkerBrief

from .helpers import new_run


class ScriptedCtx(NodeContext):
    """Answers the Worker's tool calls like ExpOS would, with a dev score that rewards a learning rate near 2e-3."""

    def call(self, tool, args=None):
        args = args or {}
        self.log.append((tool, args))
        if tool == "contract.show":
            return SimpleNamespace(budget={"max_rows": 20_000, "max_train_steps": 400})
        if tool == "data.generate":
            return SimpleNamespace(dataset=f"{len(self.log):064x}")
        if tool == "experiment.submit":
            lr = args["config"]["learning_rate"]
            score = round(max(0.0, 1.0 - abs(lr - 2e-3) * 300), 6)
            xid = f"exp-{len(self.log):05d}"
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
            res = {
                "experiment_id": xid,
                "status": "completed",
                "dev_score": score,
                "steps": args["config"]["max_steps"],
            }
            return SimpleNamespace(model_dump=lambda: res)
        if tool == "results.list":
            return SimpleNamespace(experiments=list(self.rows))
        if tool == "worker.finalize":
            self.final = args
            return None
        raise AssertionError(tool)


def _ctx(expos, direction, *, seconds=1000.0, memory=()):
    from rsi_master.expos import Caller

    ctx = ScriptedCtx(
        expos,
        Caller("worker", "w1"),
        WorkerBrief("explore", direction, timing={"step_s": 0.01, "overhead_s": 0.1}),
        time.time() + seconds,
        0,
        list(memory),
    )
    ctx.log, ctx.rows, ctx.final = [], [], None
    return ctx


DIRECTION = Direction(
    family="answer_only",
    trials=6,
    knobs={"n_facts": Range(kind="int", low=3, high=5)},
    train={
        "learning_rate": Range(kind="float", low=5e-4, high=3e-3, log=True),
        "batch_size": Range(kind="choice", choices=[8]),
        "max_steps": Range(kind="int", low=20, high=40),
    },
)


def test_worker_runs_its_trials_then_claims_its_best_exactly(tmp_path):
    with new_run(tmp_path) as expos:
        ctx = _ctx(expos, DIRECTION)
        TPEWorker().run(ctx)
        submits = [a for t, a in ctx.log if t == "experiment.submit"]
        assert len(submits) == 6
        assert all(20 <= a["config"]["max_steps"] <= 40 for a in submits)
        gens = [a for t, a in ctx.log if t == "data.generate"]
        assert all(3 <= g["params"]["n_facts"] <= 5 for g in gens)
        assert len({g["seed"] for g in gens}) == 6  # fresh data every trial
        # Three search trials from the base, then each trial continues the best checkpoint so far
        # with its recipe (here the score depends on the rate alone: the latest link ties its head).
        parents = [a["parent"] for a in submits]
        ids = [r.experiment_id for r in ctx.rows]
        assert parents[:3] == ["base"] * 3 and parents[3] in ids[:3] and parents[4:] == ids[3:5]
        head = next(r for r in ctx.rows if r.experiment_id == parents[3])
        assert all(a["config"]["learning_rate"] == head.config["learning_rate"] for a in submits[3:])
        assert all(a["config"]["max_steps"] == 40 for a in submits[3:])  # a link trains as long as it may
        best = ctx.rows[-1]  # the best score, with the most training behind it
        assert best.dev_score == max(r.dev_score for r in ctx.rows)
        assert ctx.final["claims"] == [{"experiment_id": best.experiment_id, "score": best.dev_score}]
        assert ctx.final["candidates"] == [best.experiment_id]
        # The recipe is a typed field of the finalization; the summary is prose for people.
        recipe = Recipe.model_validate(ctx.final["recipe"])
        assert recipe.experiment_id == best.experiment_id and recipe.family == "answer_only"
        assert recipe.dev_score == best.dev_score and recipe.config.learning_rate == best.config["learning_rate"]
        assert "recipe" not in ctx.final["summary"]


def test_worker_fits_trials_into_its_time_and_stops_when_none_fits(tmp_path):
    with new_run(tmp_path) as expos:
        ctx = _ctx(expos, DIRECTION, seconds=0.05)
        TPEWorker().run(ctx)
        assert not [t for t, _ in ctx.log if t == "experiment.submit"]
        assert ctx.final["claims"] == [] and ctx.final["candidates"] == []
        # 0.1 s overhead + 0.01 s/step: 0.35 s left fits 25 steps, not the 40 the search may want.
        ctx = _ctx(expos, DIRECTION.model_copy(update={"trials": 1}), seconds=0.35)
        TPEWorker().run(ctx)
        (sub,) = [a for t, a in ctx.log if t == "experiment.submit"]
        assert sub["config"]["max_steps"] <= 25


def test_a_resumed_worker_counts_its_earlier_trials(tmp_path):
    memory = [
        Trial(
            experiment_id=f"exp-0000{i}",
            status=s,
            dev_score=v,
            steps=30,
            seconds=1.0,
            data={"params": {"n_facts": 4}},
            spec={"learning_rate": 1e-3, "batch_size": 8, "max_steps": 30},
        )
        for i, (s, v) in enumerate([("completed", 0.3), ("interrupted", None)])
    ]
    with new_run(tmp_path) as expos:
        ctx = _ctx(expos, DIRECTION, memory=memory)
        TPEWorker().run(ctx)
        assert len([t for t, _ in ctx.log if t == "experiment.submit"]) == DIRECTION.trials - 2


def test_trials_are_priced_per_example_so_a_larger_batch_gets_fewer_steps():
    from rsi_master.orchestra._worker import trial_seconds

    # Measured: 100 steps of batch 8 in 10 s of training (plus 1 s overhead per trial).
    memory = [Trial(steps=100, seconds=11.0, batch_size=8)]
    timing = {"overhead_s": 1.0}
    assert trial_seconds(memory, timing, 8) == (0.1, 1.0)
    assert trial_seconds(memory, timing, 16) == (0.2, 1.0)  # not the 0.1 s a batch-8 step took
    # Memory rebuilt from the ledger on resume carries the batch in the spec.
    assert trial_seconds([Trial(steps=100, seconds=11.0, spec={"batch_size": 16})], timing, 8) == (0.05, 1.0)
    # Before the Worker measured anything: the run's per-example time, else its per-step time.
    assert trial_seconds([], {"overhead_s": 1.0, "example_s": 0.01, "step_s": 0.5}, 16) == (0.16, 1.0)
    assert trial_seconds([], {"overhead_s": 1.0, "step_s": 0.5}, 16) == (0.5, 1.0)
    # Nothing measured anywhere: the default (2 s a step of batch 8) is priced per example too.
    assert trial_seconds([], {}, 2) == (0.5, 25.0)
    assert trial_seconds([], {}, 8) == trial_seconds([], {}) == (2.0, 25.0)


def test_a_batch_16_trial_is_sized_to_the_time_left(tmp_path):
    d = DIRECTION.model_copy(
        update={"trials": 1, "train": {**DIRECTION.train, "batch_size": Range(kind="choice", choices=[16])}}
    )
    with new_run(tmp_path) as expos:
        ctx = _ctx(expos, d, seconds=0.35)
        ctx.brief = replace(ctx.brief, timing={"example_s": 0.001, "overhead_s": 0.1})  # 0.016 s a batch-16 step
        TPEWorker().run(ctx)
        (sub,) = [a for t, a in ctx.log if t == "experiment.submit"]
        assert sub["config"]["batch_size"] == 16 and sub["config"]["max_steps"] <= 15


def test_a_worker_measures_its_own_overhead_from_the_training_time_its_trials_report():
    from rsi_master.orchestra._worker import trial_seconds

    # A 12 s calibration trial, 8.4 s of it training 20 steps of batch 16: the default 25 s
    # overhead would leave nothing for the steps and price them at the 0.02 s floor.
    memory = [Trial(steps=20, seconds=12.0, train_seconds=8.4, batch_size=16)]
    per_step, fixed = trial_seconds(memory, {}, 16)
    assert abs(per_step - 0.42) < 1e-9 and abs(fixed - 3.6) < 1e-9
    assert abs(trial_seconds(memory, {}, 8)[0] - 0.21) < 1e-9


class FlatCtx(ScriptedCtx):
    """Every trial scores 0, as in the first minutes of a campaign on this landscape."""

    def call(self, tool, args=None):
        out = super().call(tool, args)
        if tool == "experiment.submit":
            self.rows[-1].dev_score = 0.0
            res = dict(out.model_dump(), dev_score=0.0)
            return SimpleNamespace(model_dump=lambda: res)
        return out


def test_on_tied_scores_the_worker_claims_the_checkpoint_with_more_training_behind_it(tmp_path):
    with new_run(tmp_path) as expos:
        ctx = _ctx(expos, DIRECTION)
        ctx.__class__ = FlatCtx
        TPEWorker().run(ctx)
        from rsi_master.orchestra._memory import lineage_examples

        trained = {r.experiment_id: (r.parent, r.config) for r in ctx.rows}
        examples = {x: lineage_examples(trained, x) for x in trained}
        assert len(set(examples.values())) > 1  # the trials differ in length (chain links add up)
        longest = max(sorted(examples), key=lambda x: examples[x])
        assert ctx.final["candidates"] == [longest]


def test_lineage_examples_add_up_the_ancestors_back_to_the_base():
    from rsi_master.orchestra._memory import lineage_examples

    exps = {
        "a": ("base", {"max_steps": 10, "batch_size": 8}),
        "b": ("a", {"max_steps": 5, "batch_size": 16}),
        "c": ("b", {"max_steps": None, "batch_size": 8}),
    }
    assert lineage_examples(exps, "a") == 80
    assert lineage_examples(exps, "b") == 160
    assert lineage_examples(exps, "c") == 160  # an epoch-sized trial of unknown length counts nothing
    assert lineage_examples(exps, "unknown") == 0
    assert lineage_examples({"x": ("x", {"max_steps": 1, "batch_size": 1})}, "x") == 1  # no loop on a cycle


def test_a_fresh_default_direction_tries_the_evaluation_distribution_first(tmp_path):
    from rsi_master.orchestra._directions import default_directions
    from rsi_master.tasks import get_task

    with new_run(tmp_path) as expos:  # knowledge
        d = {x.family: x for x in default_directions(expos.task)}["answer_only"]
        ctx = _ctx(expos, d.model_copy(update={"trials": 4}))
        TPEWorker().run(ctx)
        gens = [a["params"] for t, a in ctx.log if t == "data.generate"]
        assert len(gens) == 4
        # the first trial's data is drawn at the knobs the sealed items use; the rest explore
        assert gens[0] == dict(get_task("knowledge").eval_params)
        # trained at the landscape's rate (1e-3) and its fastest-turning batch (2; docs/tasks.md), as
        # long as the search and the contract allow (this fake contract caps an experiment at 400)
        sub0 = next(a["config"] for t, a in ctx.log if t == "experiment.submit")
        assert (sub0["learning_rate"], sub0["batch_size"], sub0["max_steps"]) == (1e-3, 2, 400)
        # every trial holds its rate and anneals at its end, so a chain of trials (a lineage)
        # trains at the rate the curves were measured at, not at half of it on average
        subs = [a["config"] for t, a in ctx.log if t == "experiment.submit"]
        assert {c["lr_scheduler"] for c in subs} == {"warmup_stable_decay"}
        assert any(g != gens[0] for g in gens[1:])


def test_the_measuring_trial_is_counted_in_examples_so_a_batch_2_trial_is_long_enough_to_time(tmp_path):
    """20 steps of batch 2 are mostly warm-up: measured 0.124 s a step in that trial against
    0.048 s in the next one, which was then sized to 529 steps where about 1,300 fit. The
    measuring trial trains as many examples as 20 steps of batch 8 (160) at any batch size."""
    first = {"k:n_facts": 4, "t:learning_rate": 1e-3, "t:batch_size": 2, "t:max_steps": 400}
    d = DIRECTION.model_copy(
        update={
            "trials": 2,
            "enqueue": [first],
            "train": {
                **DIRECTION.train,
                "batch_size": Range(kind="choice", choices=[2, 8]),
                "max_steps": Range(kind="int", low=20, high=400),
            },
        }
    )
    with new_run(tmp_path) as expos:
        ctx = _ctx(expos, d)
        ctx.brief = replace(ctx.brief, timing={})  # uncalibrated
        TPEWorker().run(ctx)
        submits = [a["config"] for t, a in ctx.log if t == "experiment.submit"]
        assert (submits[0]["batch_size"], submits[0]["max_steps"]) == (2, 80)
        assert (submits[1]["batch_size"], submits[1]["max_steps"]) == (2, 400)


def test_a_batch_2_measuring_trial_in_a_short_allowance_is_not_cut_by_a_batch_8_price(tmp_path):
    """With 90 s left and nothing measured, the default price of 2 s a step (a batch-8 step)
    cut a batch-2 measuring trial to 32 steps, too few to time; priced per example it is 80."""
    first = {"k:n_facts": 4, "t:learning_rate": 1e-3, "t:batch_size": 2, "t:max_steps": 400}
    d = DIRECTION.model_copy(
        update={
            "trials": 1,
            "enqueue": [first],
            "train": {
                **DIRECTION.train,
                "batch_size": Range(kind="choice", choices=[2, 8]),
                "max_steps": Range(kind="int", low=20, high=400),
            },
        }
    )
    with new_run(tmp_path) as expos:
        ctx = _ctx(expos, d, seconds=90.0)
        ctx.brief = replace(ctx.brief, timing={})  # uncalibrated
        TPEWorker().run(ctx)
        submits = [a["config"] for t, a in ctx.log if t == "experiment.submit"]
        assert (submits[0]["batch_size"], submits[0]["max_steps"]) == (2, 80)


def test_the_short_measuring_trial_does_not_use_up_the_enqueued_first_point(tmp_path):
    """On a machine nothing has been measured on, the first trial is cut to 20 steps to time
    it; the point the Main enqueued is then run again at full length, not dropped for TPE's
    random start."""
    first = {"k:n_facts": 5, "t:learning_rate": 2e-3, "t:batch_size": 8, "t:max_steps": 40}
    d = DIRECTION.model_copy(update={"trials": 3, "enqueue": [first]})
    with new_run(tmp_path) as expos:
        ctx = _ctx(expos, d)
        ctx.brief = replace(ctx.brief, timing={})  # uncalibrated
        TPEWorker().run(ctx)
        submits = [a["config"] for t, a in ctx.log if t == "experiment.submit"]
        gens = [a["params"] for t, a in ctx.log if t == "data.generate"]
        assert submits[0]["max_steps"] <= 20 and submits[1]["max_steps"] == 40
        assert gens[0]["n_facts"] == gens[1]["n_facts"] == 5
        assert submits[0]["learning_rate"] == submits[1]["learning_rate"] == 2e-3


class RefusingCtx(ScriptedCtx):
    """ExpOS refusing every experiment, as it refuses a learning rate above a spec's bound."""

    def call(self, tool, args=None):
        if tool == "experiment.submit":
            self.log.append((tool, args))
            from rsi_master.expos import ToolInvalid

            raise ToolInvalid("invalid training parameters: learning_rate: Input should be less than or equal to 0.1")
        return super().call(tool, args)


def test_a_refused_measuring_trial_is_not_enqueued_again_and_a_worker_refused_throughout_stops(tmp_path):
    """A refusal costs no time: re-enqueuing a refused measuring point had a Worker submit it
    ten thousand times (a simulated task's learning-rate range above the spec's bound). It is
    not re-enqueued, and a Worker whose trials are all refused stops after
    `MAX_FAILED_IN_A_ROW` of them and reports."""
    from rsi_master.orchestra._worker import MAX_FAILED_IN_A_ROW

    first = {"k:n_facts": 5, "t:learning_rate": 2e-3, "t:batch_size": 8, "t:max_steps": 40}
    d = DIRECTION.model_copy(update={"trials": 10 * MAX_FAILED_IN_A_ROW, "enqueue": [first]})
    with new_run(tmp_path) as expos:
        ctx = RefusingCtx(
            expos,
            ctx_caller(),
            WorkerBrief("explore", d),
            time.time() + 1000.0,
            0,
            [],
        )
        ctx.log, ctx.rows, ctx.final = [], [], None
        TPEWorker().run(ctx)
        submits = [a["config"] for t, a in ctx.log if t == "experiment.submit"]
        assert len(submits) == MAX_FAILED_IN_A_ROW
        assert sum(c["learning_rate"] == 2e-3 for c in submits) == 1  # the enqueued point, once
        assert ctx.final is not None and ctx.final["claims"] == []
        # Its summary says why nothing completed, not only that nothing did.
        assert ctx.final["summary"].endswith(
            "(0 started, failed: []; last error: invalid training parameters: learning_rate: "
            "Input should be less than or equal to 0.1)"
        ), ctx.final["summary"]


def ctx_caller():
    from rsi_master.expos import Caller

    return Caller("worker", "w1")


class SamplingCtx(ScriptedCtx):
    """Also answers `data.sample` (a checkpoint family's data) as ExpOS would."""

    def call(self, tool, args=None):
        if tool == "data.sample":
            self.log.append((tool, args))
            return SimpleNamespace(dataset=f"{len(self.log):064x}")
        return super().call(tool, args)


def test_a_worker_samples_its_data_from_its_parent_for_a_checkpoint_family(tmp_path):
    d = DIRECTION.model_copy(
        update={"family": "self_distill", "parent": "exp-00042", "trials": 2, "knobs": {}, "method": "sft"}
    )
    with new_run(tmp_path) as expos:
        ctx = _ctx(expos, d)
        ctx.__class__ = SamplingCtx
        TPEWorker().run(ctx)
        samples = [a for t, a in ctx.log if t == "data.sample"]
        assert len(samples) == 2 and not [t for t, _ in ctx.log if t == "data.generate"]
        # A continuation searches one trial from its parent, then continues its own checkpoint:
        # each trial samples from the checkpoint it trains.
        first = ctx.rows[0].experiment_id
        assert [(s["family"], s["parent"]) for s in samples] == [("self_distill", "exp-00042"), ("self_distill", first)]
        assert [a["parent"] for t, a in ctx.log if t == "experiment.submit"] == ["exp-00042", first]


class BarrenCtx(ScriptedCtx):
    """`data.sample` keeps nothing: `passing` of each call's `sampled` completions passed."""

    sampled = 80
    passing = 0

    def call(self, tool, args=None):
        if tool == "data.sample":
            from rsi_master.expos import NothingSampled

            self.log.append((tool, args))
            raise NothingSampled(
                "self_distill: nothing to register",
                parent=args["parent"],
                sampled=self.sampled,
                passing=self.passing,
                prompts=10,
            )
        return super().call(tool, args)


def _barren_run(tmp_path, *, sampled, passing):
    d = DIRECTION.model_copy(update={"family": "self_distill", "parent": "base", "trials": 6, "knobs": {}})
    with new_run(tmp_path) as expos:
        ctx = _ctx(expos, d)
        ctx.__class__ = BarrenCtx
        ctx.sampled, ctx.passing = sampled, passing
        TPEWorker().run(ctx)
        return [a for t, a in ctx.log if t == "data.sample"], ctx.final


def test_a_parent_that_passes_none_of_its_sampled_completions_is_not_sampled_again(tmp_path):
    # A model that scores 0 cannot teach itself: one try shows it, the rest of the allowance is not spent on it.
    samples, final = _barren_run(tmp_path, sampled=80, passing=0)
    assert len(samples) == 1
    assert final is not None and "nothing to register" in final["summary"]


def test_too_few_completions_to_judge_a_parent_are_sampled_again(tmp_path):
    # 0 of 20 is weak evidence (a 5% parent shows it a third of the time): the Worker tries again,
    # and stops once the parent has failed 64 completions in all.
    samples, _ = _barren_run(tmp_path, sampled=20, passing=0)
    assert len(samples) == 4
    # A parent some of whose completions pass is not barren: the Worker keeps trying its trials.
    samples, _ = _barren_run(tmp_path / "b", sampled=80, passing=1)
    assert len(samples) == 6
