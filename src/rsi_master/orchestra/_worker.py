"""The programmatic Worker: Optuna TPE over its direction's knobs, through ExpOS only.

Each trial: generate data with the suggested knob values (mixed with the direction's
fixed extra sources, for a branch that combines findings), train from the direction's
parent with the suggested training parameters, read the `dev` score the submit returns.
TPE is seeded with the Worker's own earlier trials (its memory, from the ledger) and
the recipes the Main agent enqueued from verified findings. After its search trials the
Worker chains: each further trial continues its best checkpoint with that recipe on fresh
data (`_chain_head`), so that its time goes into depth rather than into siblings of one
parent. The Worker stops when its trials or its wall-clock allowance run out, then
finalizes citing experiment ids.
"""

from __future__ import annotations

import math
from typing import Any

from .. import _clock
from ..events import Hyperparameters, Recipe, Source
from ..expos import NothingSampled, ToolError
from ..tasks import SAMPLING_FAMILIES
from ._directions import Direction
from ._memory import Trial, lineage_examples, worker_memory
from ._protocols import BudgetEnd, WorkerContext, worker_agent
from ._search_space import order_bounds
from ._trial_timing import (
    CALIBRATION_EXAMPLES,
    MIN_STEPS,
    calibrated,
    cheapest_batch,
    fitting_batch,
    min_trial_seconds,
    trial_seconds,
)
from ._worker_search import NextTrial, Search, chain_head, clip, search_space

__all__ = ["TPEWorker", "min_trial_seconds", "trial_seconds"]

# Trials in a row that were refused or failed after which a Worker stops and reports: a refusal
# costs no time, so a Worker whose every point is refused would otherwise loop to its trial cap.
MAX_FAILED_IN_A_ROW = 20
# A parent none of whose first BARREN_SAMPLES sampled completions passed the task's scorer is not
# sampled from again by this Worker: at a true pass rate of 5% that happens by chance 4% of the
# time, and each further try costs a model load and a generation pass for nothing to train on.
BARREN_SAMPLES = 64


@worker_agent("tpe")
class TPEWorker:
    """Bounded loop: at most `direction.trials` experiments, never past the deadline, and no
    more after `MAX_FAILED_IN_A_ROW` trials in a row were refused or failed."""

    last_error: str | None = None  # the last refused or failed call of a trial, for the finalize summary

    def run(self, ctx: WorkerContext) -> None:
        d = ctx.brief.direction
        s = self._start(ctx, d)
        failed_in_a_row = 0
        while s.started < d.trials:
            nxt = self._next(ctx, d, s)
            if nxt is None:
                break  # not even the shortest trial fits the time left
            t0 = _clock.now()
            seed = ctx.seed * 10_000 + d.seed * 100 + s.started
            try:
                outcome = self._trial(
                    ctx, d, nxt.knobs, nxt.train, nxt.n, seed=seed, family=nxt.family, parent=nxt.parent
                )
            except BudgetEnd:
                break  # out of time mid-trial: whatever finished is still worth a finalize
            completed = self._record(d, s, nxt, outcome, t0)
            try:
                self._after_trial(ctx, d, s.memory, nxt.train)
            except BudgetEnd:
                break
            failed_in_a_row = 0 if completed else failed_in_a_row + 1
            if failed_in_a_row >= MAX_FAILED_IN_A_ROW:
                break
            if not completed and self._barren(nxt.parent):
                break  # its next trial would sample the same parent again (a chain starts from a completed one)
        self._finalize(ctx, d)

    def _start(self, ctx: WorkerContext, d: Direction) -> Search:
        """The study, seeded with evidence: the Worker's own earlier trials (after a resume), then
        the verified recipes the Main enqueued."""
        import optuna
        from optuna.trial import TrialState, create_trial

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        contract = ctx.call("contract.show")
        space = self._space(ctx, d)
        study = self._study(ctx, d)
        memory = list(ctx.memory)
        for m in memory:
            params = self._params_of(d, m)
            clipped = {k: clip(space[k], v) for k, v in params.items() if k in space}
            if any(v is None for v in clipped.values()) or set(clipped) != set(space):
                continue
            ok = m.status == "completed" and m.dev_score is not None
            study.add_trial(
                create_trial(
                    params=clipped,
                    distributions=space,
                    value=m.dev_score if ok else None,
                    state=TrialState.COMPLETE if ok else TrialState.FAIL,
                )
            )
        for rec in d.enqueue:
            study.enqueue_trial({k: v for k, v in rec.items() if k in space}, skip_if_exists=True)
        return Search(
            study,
            space,
            memory,
            params_of={m.experiment_id: self._params_of(d, m) for m in memory if m.experiment_id},
            links={m.experiment_id for m in memory if m.experiment_id and m.parent != d.parent},
            started=len(memory),
            max_rows=int(contract.budget["max_rows"]),
            max_steps=int(contract.budget["max_train_steps"]),
            dev_items=int((getattr(contract, "split_sizes", None) or {}).get("dev") or 0),
        )

    def _next(self, ctx: WorkerContext, d: Direction, s: Search) -> NextTrial | None:
        """The next trial (a chain link, else the study's next point) sized to the time left at its
        batch size, or at a smaller one where not even its shortest trial fits; None when no trial
        fits at all."""
        timing = ctx.brief.timing
        per_step, fixed = trial_seconds(s.memory, timing, cheapest_batch(d))
        left = ctx.time_left()
        if left < fixed + MIN_STEPS * per_step:
            return None
        head = self._chain_head(d, s.memory, s.links, s.dev_items) if self.CHAIN else None
        trial: Any = None if head is not None else s.study.ask(s.space)
        params = dict(s.params_of[head]) if head is not None else dict(trial.params)
        family, knobs, train = self._compose(d, params)
        steps_range = d.train.get("max_steps")
        if head is not None and steps_range is not None and steps_range.high is not None:
            train["max_steps"] = int(steps_range.high)  # a link trains as long as the time left allows
        batch = int(train.get("batch_size", 8))
        per_step, fixed = trial_seconds(s.memory, timing, batch)
        fit = int((left - fixed) / per_step)
        if fit < MIN_STEPS:
            # Not even the shortest trial fits at the drawn batch: a smaller batch (and so a
            # smaller dataset) does, rather than a trial forced past the deadline.
            batch = fitting_batch(d, batch, lambda b: trial_seconds(s.memory, timing, b), left)
            train["batch_size"] = batch
            per_step, fixed = trial_seconds(s.memory, timing, batch)
            fit = int((left - fixed) / per_step)
        train["max_steps"] = max(MIN_STEPS, min(int(train.get("max_steps", 60)), fit, s.max_steps))
        calibrating = head is None and not calibrated(s.memory, timing)
        if calibrating:
            # Nothing measured on this machine yet: a short first trial measures it, so that
            # the following ones are sized to the deadline instead of overrunning it. Counted
            # in examples, because a few steps of a small batch are mostly warm-up and would
            # price a step far above what the next trial pays.
            train["max_steps"] = min(train["max_steps"], max(2 * MIN_STEPS, -(-CALIBRATION_EXAMPLES // max(1, batch))))
        n = min(s.max_rows, int(train["max_steps"]) * batch)
        return NextTrial(trial, head, params, family, knobs, train, n, head or d.parent, calibrating)

    def _record(self, d: Direction, s: Search, nxt: NextTrial, outcome: dict[str, Any] | None, t0: float) -> bool:
        """Tell the study how the trial ended and add it to the memory; whether it completed."""
        from optuna.trial import TrialState

        s.started += 1
        xid = (outcome or {}).get("experiment_id")
        if xid:
            s.params_of[xid] = nxt.params
            if nxt.head is not None:
                s.links.add(xid)
        completed = outcome is not None and outcome.get("status") == "completed"
        if nxt.trial is None:
            pass  # a chain link is more training of a recipe TPE already scored, not a new point
        elif not completed:
            s.study.tell(nxt.trial, state=TrialState.FAIL)
        else:
            s.study.tell(nxt.trial, float((outcome or {}).get("dev_score") or 0.0))
        if nxt.calibrating and d.enqueue and nxt.trial is not None and completed:
            # The short measuring trial took the first point the Main enqueued (the evaluation
            # distribution, or a verified recipe): the next trial runs it at full length, or
            # the only trial of it that trained would be the short one and the rest random draws.
            # Not when it was refused or failed: the same point would be refused again, and
            # a refusal costs no time, so a Worker re-tried one point ten thousand times.
            s.study.enqueue_trial(dict(nxt.trial.params), skip_if_exists=False)
        batch = int(nxt.train.get("batch_size", 8))
        s.memory.append(Trial.of_outcome(outcome, parent=nxt.parent, seconds=_clock.now() - t0, batch_size=batch))
        return completed

    def _barren(self, parent: str) -> bool:
        """Whether `parent` passed none of at least BARREN_SAMPLES completions sampled from it."""
        sampled, passing = self.__dict__.get("sampled_from", {}).get(parent, (0, 0))
        return passing == 0 and sampled >= BARREN_SAMPLES

    # -- chaining --------------------------------------------------------------------------
    # A trial's steps are capped (the contract's `max_train_steps`), and every trial from the
    # direction's parent starts that parent over: six sibling trials leave a lineage one trial
    # deeper, however long the Worker ran. After `SEARCH_TRIALS` trials from the parent (one for a
    # continuation, whose first trial is the verified recipe), each further trial continues the
    # Worker's best checkpoint with that checkpoint's recipe on fresh data, so that the Worker's
    # time goes into depth: a late-rising direction shows its curve within one Worker, and the
    # candidate the Worker hands over has all of it behind it.
    CHAIN = True
    SEARCH_TRIALS = 3

    def _chain_head(self, d: Direction, memory: list[Trial], links: set[str], dev_items: int) -> str | None:
        """The experiment the next trial continues, or None for a search trial from the parent
        (`chain_head`: after `SEARCH_TRIALS` trials from the base, one for a continuation)."""
        return chain_head(memory, links, dev_items, self.SEARCH_TRIALS if d.parent == "base" else 1)

    # -- extension points (the `tpe` Worker's own choices) ---------------------------------
    def _space(self, ctx: WorkerContext, d: Direction) -> dict[str, Any]:
        return search_space(d)

    def _study(self, ctx: WorkerContext, d: Direction) -> Any:
        import optuna

        return optuna.create_study(direction="maximize", sampler=self._sampler(ctx, d))

    def _sampler(self, ctx: WorkerContext, d: Direction) -> Any:
        import optuna

        return optuna.samplers.TPESampler(seed=d.seed + ctx.seed, n_startup_trials=2)

    def _compose(self, d: Direction, params: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """(generator family, knob values, training parameters) of one suggested trial."""
        knobs = {k: r.value for k, r in d.knobs.items() if r.kind == "fixed"}
        knobs.update({k[2:]: v for k, v in params.items() if k.startswith("k:")})
        order_bounds(knobs)
        train = {k: r.value for k, r in d.train.items() if r.kind == "fixed"}
        train.update({k[2:]: v for k, v in params.items() if k.startswith("t:")})
        return d.family, knobs, train

    def _after_trial(self, ctx: WorkerContext, d: Direction, memory: list[Trial], train: dict[str, Any]) -> None:
        """Called after each trial with the Worker's memory; the `tpe` Worker does nothing here."""

    # -- one trial -------------------------------------------------------------------------
    def _trial(
        self,
        ctx: WorkerContext,
        d: Direction,
        knobs: dict[str, Any],
        train: dict[str, Any],
        n: int,
        *,
        seed: int,
        family: str | None = None,
        parent: str | None = None,
    ) -> dict[str, Any] | None:
        """Data then experiment (from `parent`, the direction's unless a chain link continues an
        own checkpoint); a refused or failed call ends the trial (it is in the ledger)."""
        try:
            name = family or d.family
            args = {"family": name, "params": knobs, "n": n, "seed": seed}
            if name in SAMPLING_FAMILIES:  # rows sampled from the direction's parent, kept by the scorer
                ds = ctx.call("data.sample", {**args, "parent": parent or d.parent})
            else:
                ds = ctx.call("data.generate", args)
            dataset = ds.dataset
            if d.mix:
                parts = [dataset]
                for j, extra in enumerate(d.mix):
                    parts.append(
                        ctx.call(
                            "data.generate",
                            {
                                "family": extra["family"],
                                "n": n,
                                "seed": seed + j + 1,
                                "params": extra.get("params", {}),
                            },
                        ).dataset
                    )
                dataset = ctx.call("data.mix", {"datasets": parts, "n": n, "seed": seed}).dataset
            res = ctx.call(
                "experiment.submit",
                {"parent": parent or d.parent, "dataset": dataset, "method": d.method, "config": train},
            )
        except NothingSampled as exc:
            # Per parent sampled from: (completions sampled, completions that passed), over this Worker's trials.
            seen: dict[str, tuple[int, int]] = self.__dict__.setdefault("sampled_from", {})
            sampled, passing = seen.get(exc.parent, (0, 0))
            seen[exc.parent] = (sampled + exc.sampled, passing + exc.passing)
            self.last_error = str(exc)[:200]
            return None
        except (ToolError, ValueError) as exc:
            # ValueError: a knob combination the generator rejects without ExpOS turning it
            # into ToolInvalid. Either way the trial failed and the search moves on.
            self.last_error = str(exc)[:200]
            return None
        return res.model_dump()

    @staticmethod
    def _params_of(d: Direction, m: Trial) -> dict[str, Any]:
        """The TPE parameters an earlier trial trained with, as far as its record says."""
        params = m.knob_values
        out = {f"k:{k}": params.get(k) for k in d.knobs}
        out.update({f"t:{k}": m.spec.get(k) for k in d.train})
        return out

    # -- finalize --------------------------------------------------------------------------
    def _finalize(self, ctx: WorkerContext, d: Direction) -> None:
        visible = ctx.call("results.list").experiments  # own and predecessors' (a continued lineage)
        rows = [r for r in visible if r.owner == ctx.caller.id]
        # Ties (all zero, early in a campaign) go to the checkpoint with more training behind it.
        trained = {r.experiment_id: (r.parent, r.config) for r in visible}
        done = sorted(
            (r for r in rows if r.status == "completed" and r.dev_score is not None),
            key=lambda r: (-r.dev_score, -lineage_examples(trained, r.experiment_id), r.experiment_id),
        )
        failed = [r.experiment_id for r in rows if r.status != "completed"]
        if not done:
            ctx.call(
                "worker.finalize",
                {
                    "summary": f"{d.key()}: no completed experiment ({len(rows)} started, failed: {failed}"
                    + (f"; last error: {self.last_error})" if self.last_error else ")"),
                    "claims": [],
                    "candidates": [],
                },
            )
            return
        best = done[0]
        own = {m.experiment_id: m for m in worker_memory(ctx.expos.reader, ctx.caller.id)}
        recipe = (
            Recipe(
                experiment_id=best.experiment_id,
                family=d.family,
                method=d.method,
                params=own[best.experiment_id].knob_values if best.experiment_id in own else {},
                mix=[Source(family=m["family"], params=m.get("params", {})) for m in d.mix],
                config=Hyperparameters(**{k: best.config.get(k) for k in ("learning_rate", "batch_size", "max_steps")}),
                parent=best.parent,
                dev_score=best.dev_score,
            )
            if math.isfinite(best.dev_score)
            else None
        )
        scores = ", ".join(f"{r.experiment_id}={r.dev_score:.3f}" for r in done)
        summary = (
            f"{d.key()}: best {best.experiment_id} dev {best.dev_score:.3f} of {len(rows)} experiments "
            f"({scores}; failed: {failed or 'none'})"
        )
        ctx.call(
            "worker.finalize",
            {
                "summary": summary,
                "claims": [{"experiment_id": best.experiment_id, "score": best.dev_score}],
                "candidates": [best.experiment_id],
                "recipe": recipe.model_dump(mode="json") if recipe else None,
            },
        )
