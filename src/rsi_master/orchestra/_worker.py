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
from ._memory import lineage_examples, worker_memory
from ._protocols import BudgetEnd, NodeContext, worker_agent
from ._search_space import order_bounds, search_distribution
from ._trial_timing import (
    CALIBRATION_EXAMPLES,
    MIN_STEPS,
    calibrated,
    cheapest_batch,
    fitting_batch,
    min_trial_seconds,
    trial_seconds,
)

__all__ = ["TPEWorker", "min_trial_seconds", "trial_seconds"]

# Trials in a row that were refused or failed after which a Worker stops and reports: a refusal
# costs no time, so a Worker whose every point is refused would otherwise loop to its trial cap.
MAX_FAILED_IN_A_ROW = 20
# A parent none of whose first BARREN_SAMPLES sampled completions passed the task's scorer is not
# sampled from again by this Worker: at a true pass rate of 5% that happens by chance 4% of the
# time, and each further try costs a model load and a generation pass for nothing to train on.
BARREN_SAMPLES = 64


def _space(d: Direction) -> dict[str, Any]:
    """Searched parameters: `k:<knob>` for data knobs, `t:<param>` for training."""
    out = {f"k:{k}": search_distribution(r) for k, r in d.knobs.items() if r.kind != "fixed"}
    out.update({f"t:{k}": search_distribution(r) for k, r in d.train.items() if r.kind != "fixed"})
    return out


def _clip(dist: Any, value: Any) -> Any:
    from optuna.distributions import CategoricalDistribution

    if isinstance(dist, CategoricalDistribution):
        return value if value in dist.choices else None
    if value is None:
        return None
    v = min(max(value, dist.low), dist.high)
    return round(v) if isinstance(dist.low, int) and not isinstance(dist.low, bool) else float(v)


@worker_agent("tpe")
class TPEWorker:
    """Bounded loop: at most `direction.trials` experiments, never past the deadline, and no
    more after `MAX_FAILED_IN_A_ROW` trials in a row were refused or failed."""

    last_error: str | None = None  # the last refused or failed call of a trial, for the finalize summary

    def run(self, ctx: NodeContext) -> None:
        import optuna
        from optuna.trial import TrialState, create_trial

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        d = Direction.model_validate(ctx.brief["direction"])
        contract = ctx.call("contract.show")
        max_rows = int(contract.budget["max_rows"])
        max_steps_cap = int(contract.budget["max_train_steps"])
        space = self._space(ctx, d)
        study = self._study(ctx, d)
        memory = list(ctx.memory)
        for m in memory:  # evidence first: the Worker's own earlier trials (after a resume)
            params = self._params_of(d, m)
            clipped = {k: _clip(space[k], v) for k, v in params.items() if k in space}
            if any(v is None for v in clipped.values()) or set(clipped) != set(space):
                continue
            ok = m["status"] == "completed" and m["dev_score"] is not None
            study.add_trial(
                create_trial(
                    params=clipped,
                    distributions=space,
                    value=m["dev_score"] if ok else None,
                    state=TrialState.COMPLETE if ok else TrialState.FAIL,
                )
            )
        for rec in d.enqueue:  # then the verified recipes the Main agent handed over
            study.enqueue_trial({k: v for k, v in rec.items() if k in space}, skip_if_exists=True)

        started = len(memory)
        dev_items = int((getattr(contract, "split_sizes", None) or {}).get("dev") or 0)
        # The TPE parameters of each own experiment (a chain link's are its head's): what a link
        # trains with, and the search trials `_chain_head` counts.
        params_of: dict[str, dict[str, Any]] = {
            m["experiment_id"]: self._params_of(d, m) for m in memory if m.get("experiment_id")
        }
        links: set[str] = {m["experiment_id"] for m in memory if m.get("experiment_id") and m.get("parent") != d.parent}
        failed_in_a_row = 0
        while started < d.trials:
            per_step, fixed = trial_seconds(memory, ctx.brief.get("timing"), cheapest_batch(d))
            left = ctx.time_left()
            if left < fixed + MIN_STEPS * per_step:
                break
            head = self._chain_head(d, memory, links, dev_items) if self.CHAIN else None
            trial = None if head is not None else study.ask(space)
            params = dict(params_of[head]) if head is not None else dict(trial.params)  # type: ignore[union-attr]
            family, knobs, train = self._compose(d, params)
            steps_range = d.train.get("max_steps")
            if head is not None and steps_range is not None and steps_range.high is not None:
                train["max_steps"] = int(steps_range.high)  # a link trains as long as the time left allows
            # Fit the trial into the time left rather than overrun the budget, at its batch size.
            batch = int(train.get("batch_size", 8))
            per_step, fixed = trial_seconds(memory, ctx.brief.get("timing"), batch)
            fit = int((left - fixed) / per_step)
            if fit < MIN_STEPS:
                # Not even the shortest trial fits at the drawn batch: a smaller batch (and so a
                # smaller dataset) does, rather than a trial forced past the deadline.
                batch = fitting_batch(d, batch, lambda b: trial_seconds(memory, ctx.brief.get("timing"), b), left)
                train["batch_size"] = batch
                per_step, fixed = trial_seconds(memory, ctx.brief.get("timing"), batch)
                fit = int((left - fixed) / per_step)
            train["max_steps"] = max(MIN_STEPS, min(int(train.get("max_steps", 60)), fit, max_steps_cap))
            calibrating = head is None and not calibrated(memory, ctx.brief.get("timing"))
            if calibrating:
                # Nothing measured on this machine yet: a short first trial measures it, so that
                # the following ones are sized to the deadline instead of overrunning it. Counted
                # in examples, because a few steps of a small batch are mostly warm-up and would
                # price a step far above what the next trial pays.
                train["max_steps"] = min(
                    train["max_steps"], max(2 * MIN_STEPS, -(-CALIBRATION_EXAMPLES // max(1, batch)))
                )
            n = min(max_rows, int(train["max_steps"]) * batch)
            t0 = _clock.now()
            try:
                outcome = self._trial(
                    ctx,
                    d,
                    knobs,
                    train,
                    n,
                    seed=ctx.seed * 10_000 + d.seed * 100 + started,
                    family=family,
                    parent=head or d.parent,
                )
            except BudgetEnd:
                break  # out of time mid-trial: whatever finished is still worth a finalize
            started += 1
            xid = (outcome or {}).get("experiment_id")
            if xid:
                params_of[xid] = params
                if head is not None:
                    links.add(xid)
            completed = outcome is not None and outcome.get("status") == "completed"
            if trial is None:
                pass  # a chain link is more training of a recipe TPE already scored, not a new point
            elif not completed:
                study.tell(trial, state=TrialState.FAIL)
            else:
                study.tell(trial, float((outcome or {}).get("dev_score") or 0.0))
            if calibrating and d.enqueue and trial is not None and completed:
                # The short measuring trial took the first point the Main enqueued (the evaluation
                # distribution, or a verified recipe): the next trial runs it at full length, or
                # the only trial of it that trained would be the short one and the rest random draws.
                # Not when it was refused or failed: the same point would be refused again, and
                # a refusal costs no time, so a Worker re-tried one point ten thousand times.
                study.enqueue_trial(dict(trial.params), skip_if_exists=False)
            memory.append(
                {
                    "parent": head or d.parent,
                    "steps": (outcome or {}).get("steps"),
                    "seconds": _clock.now() - t0,
                    "train_seconds": (outcome or {}).get("train_seconds"),
                    "batch_size": int(train.get("batch_size", 8)),
                    "status": (outcome or {}).get("status", "refused"),
                    "dev_score": (outcome or {}).get("dev_score"),
                    "experiment_id": (outcome or {}).get("experiment_id"),
                }
            )
            try:
                self._after_trial(ctx, d, memory, train)
            except BudgetEnd:
                break
            failed_in_a_row = 0 if completed else failed_in_a_row + 1
            if failed_in_a_row >= MAX_FAILED_IN_A_ROW:
                break
            if not completed and self._barren(head or d.parent):
                break  # its next trial would sample the same parent again (a chain starts from a completed one)
        self._finalize(ctx, d)

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

    def _chain_head(self, d: Direction, memory: list[dict[str, Any]], links: set[str], dev_items: int) -> str | None:
        """The experiment the next trial continues, or None for a search trial from the parent.

        The head is the latest chain link while its `dev` score is within two binomial standard
        errors of the Worker's best (a deeper checkpoint that scores the same is the better
        start: its score is one noisy draw), else the best one (ties to more training)."""
        done = [
            m
            for m in memory
            if m.get("status") == "completed"
            and m.get("experiment_id")
            and m.get("dev_score") is not None
            and math.isfinite(float(m["dev_score"]))
        ]
        searched = sum(1 for m in memory if m.get("experiment_id") not in links)
        need = self.SEARCH_TRIALS if d.parent == "base" else 1
        if not done or searched < need:
            return None
        best = max(done, key=lambda m: (float(m["dev_score"]), m["experiment_id"] in links))
        latest = next((m for m in reversed(done) if m["experiment_id"] in links), None)
        if latest is not None:
            p = min(max(float(best["dev_score"]), 0.05), 0.95)
            tol = 2 * math.sqrt(p * (1 - p) / max(1, dev_items))
            if float(latest["dev_score"]) >= float(best["dev_score"]) - tol:
                return str(latest["experiment_id"])
        return str(best["experiment_id"])

    # -- extension points (the `tpe` Worker's own choices) ---------------------------------
    def _space(self, ctx: NodeContext, d: Direction) -> dict[str, Any]:
        return _space(d)

    def _study(self, ctx: NodeContext, d: Direction) -> Any:
        import optuna

        return optuna.create_study(direction="maximize", sampler=self._sampler(ctx, d))

    def _sampler(self, ctx: NodeContext, d: Direction) -> Any:
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

    def _after_trial(self, ctx: NodeContext, d: Direction, memory: list[dict[str, Any]], train: dict[str, Any]) -> None:
        """Called after each trial with the Worker's memory; the `tpe` Worker does nothing here."""

    # -- one trial -------------------------------------------------------------------------
    def _trial(
        self,
        ctx: NodeContext,
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
    def _params_of(d: Direction, m: dict[str, Any]) -> dict[str, Any]:
        out = {f"k:{k}": m.get("data", {}).get("params", {}).get(k) for k in d.knobs}
        out.update({f"t:{k}": m.get("spec", {}).get(k) for k in d.train})
        return out

    # -- finalize --------------------------------------------------------------------------
    def _finalize(self, ctx: NodeContext, d: Direction) -> None:
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
        memory = {m["experiment_id"]: m for m in _own_memory(ctx)}
        recipe = (
            Recipe(
                experiment_id=best.experiment_id,
                family=d.family,
                method=d.method,
                params=memory.get(best.experiment_id, {}).get("data", {}).get("params", {}),
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


def _own_memory(ctx: NodeContext) -> list[dict[str, Any]]:

    return worker_memory(ctx.expos, ctx.caller.id)
