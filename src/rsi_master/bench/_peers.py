"""Multi-fidelity search peers: asynchronous successive halving (ASHA) and Hyperband, with
Optuna's pruners through its ask-and-tell interface.

The resource is training steps. A trial is one recipe from the union space (generator family,
its knobs, learning rate, batch size: `TPESearchWorker`'s space without `max_steps`); it
trains `min_resource` steps from the base model, reports its `dev` score at its step count
(`trial.report`), and, unless the pruner stops it (`trial.should_prune`), continues from its
own checkpoint on fresh rows of the same recipe to the next rung (`min_resource *
reduction_factor ** k` steps in all), up to `max_resource`. Every training run is an
`experiment.submit` whose parent is the trial's previous rung, so ExpOS records each rung as
an experiment of the Worker's lineage and the checkpoints are the ones it trained.

The Workers of a run (one per slot) share one study in a journal file, as Optuna runs parallel
workers (a simulated run's, threads of one process, share it in memory), so the pruner ranks each rung against every Worker's trials: that is the asynchronous
part of ASHA (a trial is promoted as soon as it is in the top 1/reduction_factor of its rung so
far, without waiting for the rung to fill).

Configured as Optuna's documentation recommends
(https://optuna.readthedocs.io/en/stable/tutorial/10_key_features/003_efficient_optimization_algorithms.html,
"Which Sampler and Pruner Should be Used?": RandomSampler with a successive-halving family
pruner, TPESampler with HyperbandPruner), and with each pruner's documented defaults
(`SuccessiveHalvingPruner`: reduction_factor 4, min_early_stopping_rate 0; `HyperbandPruner`:
reduction_factor 3) except the resource bounds, which must be in our unit (steps):
`min_resource` is the lower end of the step range every direction searches and
`max_resource` its upper end. ASHA samples at random, as in Li et al., "A System for Massively
Parallel Hyperparameter Tuning" (MLSys 2020).
"""

from __future__ import annotations

from typing import Any

from ..orchestra import DEFAULT_TRAIN, BudgetEnd, Direction, Range, Trial, WorkerContext, worker_agent
from ..orchestra import trial_seconds as _trial_seconds
from ._workers import TPESearchWorker

__all__ = ["ASHAWorker", "HyperbandWorker", "resource_bounds"]

MIN_STEPS = 10  # the shortest experiment worth starting (the orchestra's Worker uses the same)


def resource_bounds(train: dict[str, Range] | None = None) -> tuple[int, int]:
    """(min_resource, max_resource) in training steps: the step range the directions search."""
    r = (train or DEFAULT_TRAIN).get("max_steps") or DEFAULT_TRAIN["max_steps"]
    if r.kind != "int":
        r = DEFAULT_TRAIN["max_steps"]
    return max(1, int(r.low or 1)), max(1, int(r.high or 1))


@worker_agent("asha")
class ASHAWorker(TPESearchWorker):
    """Random configurations, promoted rung by rung by Optuna's `SuccessiveHalvingPruner` (ASHA)."""

    STUDY = "union-asha"

    def _sampler(self, ctx: WorkerContext, d: Direction) -> Any:
        import optuna

        return optuna.samplers.RandomSampler(seed=d.seed + ctx.seed)

    bounds: tuple[int, int] = resource_bounds()  # set from the task's directions when the Worker runs

    def _pruner(self) -> Any:
        import optuna

        return optuna.pruners.SuccessiveHalvingPruner(min_resource=self.bounds[0])

    def _rungs(self) -> list[int]:
        """Cumulative steps at which a trial reports: min_resource * reduction_factor**k, up to max."""
        lo, hi = self.bounds
        eta = self.REDUCTION
        out = [lo]
        while out[-1] * eta < hi:
            out.append(out[-1] * eta)
        return [*out, hi] if out[-1] < hi else out

    REDUCTION = 4  # SuccessiveHalvingPruner's default reduction_factor

    def _space(self, ctx: WorkerContext, d: Direction) -> dict[str, Any]:
        space = super()._space(ctx, d)
        space.pop("t:max_steps", None)  # the steps are the resource, not a searched parameter
        return space

    def run(self, ctx: WorkerContext) -> None:
        import optuna
        from optuna.trial import TrialState

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        d = ctx.brief.direction
        self.bounds = resource_bounds(self._train(ctx))
        contract = ctx.call("contract.show")
        max_rows = int(contract.budget["max_rows"])
        cap = int(contract.budget["max_train_steps"])
        space = self._space(ctx, d)
        study = self._study(ctx, d)
        memory = list(ctx.memory)
        n_trial = 0  # configurations asked by this Worker (bounded by the direction's trials)
        try:
            while n_trial < d.trials and self._fits(ctx, memory, 2):
                trial = study.ask(space)
                family, knobs, train = self._compose(d, dict(trial.params))
                state, value = self._climb(ctx, d, trial, family, knobs, train, memory, max_rows, cap, n_trial)
                n_trial += 1
                if state == TrialState.COMPLETE:
                    study.tell(trial, value)
                else:
                    study.tell(trial, state=state)
        except BudgetEnd:
            pass  # out of time: whatever finished is still worth a finalize
        self._finalize(ctx, d)

    def _fits(self, ctx: WorkerContext, memory: list[Trial], batch: int) -> bool:
        per_step, fixed = _trial_seconds(memory, ctx.brief.timing, batch)
        return ctx.time_left() >= fixed + MIN_STEPS * per_step

    def _climb(
        self,
        ctx: WorkerContext,
        d: Direction,
        trial: Any,
        family: str,
        knobs: dict[str, Any],
        train: dict[str, Any],
        memory: list[Trial],
        max_rows: int,
        cap: int,
        n_trial: int,
    ) -> tuple[Any, float | None]:
        """Train one trial rung by rung; (final trial state, value for a completed trial)."""
        from optuna.trial import TrialState

        batch = int(train.get("batch_size", 8))
        parent, done, last, chunk = "base", 0, None, 0
        for target in self._rungs():
            while done < target:  # a rung longer than the contract's step cap takes several experiments
                per_step, fixed = _trial_seconds(memory, ctx.brief.timing, batch)
                fit = int((ctx.time_left() - fixed) / per_step)
                steps = min(target - done, cap, fit)
                if steps < MIN_STEPS:
                    # Out of time: a trial that reported is left as it stands (pruned at its rung).
                    return (TrialState.PRUNED, None) if last is not None else (TrialState.FAIL, None)
                t0 = ctx.deadline - ctx.time_left()
                cfg = dict(train, max_steps=steps)
                outcome = self._trial(
                    ctx,
                    d.model_copy(update={"parent": parent}),
                    knobs,
                    cfg,
                    min(max_rows, steps * batch),
                    seed=(ctx.seed * 10_000 + d.seed) * 1_000 + n_trial * 50 + chunk,
                    family=family,
                )
                seconds = ctx.deadline - ctx.time_left() - t0
                memory.append(Trial.of_outcome(outcome, parent=None, seconds=seconds, batch_size=batch))
                if outcome is None or outcome.get("status") != "completed":
                    return (TrialState.PRUNED, None) if last is not None else (TrialState.FAIL, None)
                parent, done, chunk = str(outcome["experiment_id"]), done + steps, chunk + 1
                last = float(outcome.get("dev_score") or 0.0)
                self._after_trial(ctx, d, memory, cfg)
            trial.report(last, done)
            if target < self._rungs()[-1] and trial.should_prune():
                return TrialState.PRUNED, None
        return TrialState.COMPLETE, last


@worker_agent("hyperband")
class HyperbandWorker(ASHAWorker):
    """TPE configurations under Optuna's `HyperbandPruner` (several successive-halving brackets)."""

    STUDY = "union-hyperband"
    REDUCTION = 3  # HyperbandPruner's default reduction_factor

    def _sampler(self, ctx: WorkerContext, d: Direction) -> Any:
        import optuna

        # TPE's defaults; Optuna's tutorial pairs TPESampler with HyperbandPruner.
        return optuna.samplers.TPESampler(seed=d.seed + ctx.seed)

    def _pruner(self) -> Any:
        import optuna

        lo, hi = self.bounds
        return optuna.pruners.HyperbandPruner(min_resource=lo, max_resource=hi)
