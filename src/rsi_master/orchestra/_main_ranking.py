"""The Main policy's rankings: which fresh directions open first (the landscape's expected
scores, then the task's prior order), and which verified checkpoints lead (review score, then
the landscape's prior for the lineage, then the training behind it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..landscape import expected_scores
from . import _reports as reports
from ._directions import Direction, default_directions, opening_curve, subset_direction
from ._graph import ResearchGraph, WorkerNode
from ._main_budget import Budget
from ._memory import lineage_examples
from ._protocols import MainContext

__all__ = ["PAYS", "TRAINING_FRACTION", "Ranking", "expected_scores", "landscape_prior"]

# An expected score the landscape's curves tell from zero: 4 of 200 items, twice the
# spread of a one-run score near 1% (about +-0.7 points on 200 items).
PAYS = 0.02
# The part of a slot's seconds that trains, in a short campaign (the rest is process start,
# data generation and evaluation).
TRAINING_FRACTION = 0.5


class Ranking(Budget):
    """The ranking rules of `PolicyMain`."""

    def _fresh_directions(self, ctx: MainContext, graph: ResearchGraph) -> list[Direction]:
        from ..tasks import get_task, task_hints

        task = ctx.expos.contract.task
        tried = {w.direction.key() for w in graph.workers.values()}
        # Tie-break of the opening order, and the whole order for a task the landscape has no
        # curves for: the task's own (`TaskHints.opening_order`).
        prior = task_hints(get_task(task)).opening_order
        # One direction's share of the slot-seconds, the part of it that trains.
        expected = expected_scores(task, TRAINING_FRACTION * self.share * ctx.budget_s * ctx.slots)
        if expected and max(expected.values()) < PAYS:
            # No direction pays on its share of this campaign: rank them by what the campaign's
            # whole training would buy, so that the one that turns soonest opens first and its
            # lineage is the one trained further (function calling in five or ten minutes:
            # every curve is below 1% at a share, plan-then-call on one shown function turns
            # first, 8.5% at 1.5 default experiments). Below PAYS the curves' order is noise.
            expected = expected_scores(task, TRAINING_FRACTION * ctx.budget_s * ctx.slots)
        # The task's families, and the data selections the landscape measured (its curves
        # labelled `family[knob=value]`): a selection that learns early opens a short campaign,
        # and ranks below the full family once the campaign affords what the curves show the
        # full family reaching past it (the selection's ceiling).
        families = default_directions(task, seed=ctx.seed)
        subsets = [s for s in (subset_direction(task, label, families) for label in sorted(expected)) if s is not None]
        # A direction is ranked by the curve of the batch size it opens at, where one was measured.
        dirs = sorted(
            [*families, *subsets],
            key=lambda d: (
                -expected.get(opening_curve(d), expected.get(d.label(), -1.0)),
                prior.index(d.family) if d.family in prior else len(prior),
                d.label(),
            ),
        )
        return [d.model_copy(update={"seconds": self._allowance(ctx)}) for d in dirs if d.key() not in tried]

    @staticmethod
    def _review_scores(ctx: MainContext) -> tuple[dict[str, tuple[float, int]], dict[str, tuple[str, dict[str, Any]]]]:
        """From one graph view: experiment -> (review score, eval record seq), and experiment ->
        (parent, training config) for `lineage_examples`."""
        view = ctx.call("graph.read")
        experiments = ctx.expos.projection().state.experiments
        out = {}
        for x in view.experiments:
            if x.get("review_score") is not None:
                evals = experiments[x["experiment_id"]].evals if x["experiment_id"] in experiments else []
                out[x["experiment_id"]] = (
                    float(x["review_score"]),
                    next((e.seq for e in evals if e.split == "review"), 0),
                )
        trained = {x["experiment_id"]: (x["parent"], x.get("config") or {}) for x in view.experiments}
        return out, trained

    def _best_verified(self, ctx: MainContext, graph: ResearchGraph) -> tuple[str, str, float, int] | None:
        """(experiment, worker, review score, record seq) of the best candidate a passing review verified."""
        ranked = self._verified(ctx, graph)
        return ranked[0] if ranked else None

    def _verified(self, ctx: MainContext, graph: ResearchGraph) -> list[tuple[str, str, float, int]]:
        """Every candidate a passing review verified, best review score first. Ties (scores
        tie at zero until a lineage has seen about a default experiment of data) go to the
        lineage the landscape expects more of after one more default experiment
        (`landscape_prior`), then to the one with more training behind it, then to the oldest."""
        passed = {w for r in graph.reviewers.values() if r.done and reports.verdict(r) == "pass" for w in r.scope}
        scores, trained = self._review_scores(ctx)
        out = []
        for w in graph.workers.values():
            if w.id not in passed:
                continue
            for xid in reports.candidates(w):
                if xid in scores:
                    out.append((xid, w.id, scores[xid][0], scores[xid][1]))
        tie = _tie_breaks(ctx, trained)

        def rank(t: tuple[str, str, float, int]) -> tuple[float, float, int, str]:
            p, n = tie(t[0], graph.workers[t[1]].direction)
            return -t[2], -p, -n, t[0]

        return sorted(out, key=rank)

    def _leader(self, ctx: MainContext, graph: ResearchGraph, r: Any) -> tuple[str, float, WorkerNode] | None:
        scores, trained = self._review_scores(ctx)
        scoped = [
            (xid, scores[xid][0], w)
            for w in (graph.workers.get(wid) for wid in r.scope)
            if w
            for xid in reports.candidates(w)
            if xid in scores
        ]
        # The first of the best (review score, then the landscape's prior, then training behind
        # it). The prior only breaks ties of review scores: measured evidence first. It matters
        # at zero: in a 5-minute arithmetic run the Main continued answer-only (0 on review,
        # 2,768 examples) over the scratchpad on additions only (0, 2,368 examples), whose
        # curve reaches 11% at one default experiment where answer-only's is at 2.5%.
        tie = _tie_breaks(ctx, trained)
        return max(scoped, key=lambda c: (c[1], *tie(c[0], c[2].direction)), default=None)


def _tie_breaks(
    ctx: MainContext, trained: dict[str, tuple[str, dict[str, Any]]]
) -> Callable[[str, Direction], tuple[float, int]]:
    """What breaks a tie of review scores, for a checkpoint and its Worker's direction: the
    landscape's prior for its lineage (`landscape_prior`), then the examples behind it."""
    prior = landscape_prior(ctx.expos.contract.task)

    def tie(xid: str, d: Direction) -> tuple[float, int]:
        n = lineage_examples(trained, xid)
        return prior(d, n), n

    return tie


def landscape_prior(task: str) -> Callable[[Direction, int], float]:
    """(direction, lineage examples) -> what the landscape's curve of the direction's family
    (its data selection included, at the batch size its first trial trained at where the
    landscape measured that batch: `opening_curve`) reaches after one more default experiment
    on top of those examples; -1 without a curve (a mix, another method, an unmeasured
    family). The landscape is read once per call of this function, not once per candidate
    ranked."""
    from ..landscape import load

    landscape = load()
    curves = landscape.curves(task)
    unit = float(landscape.default_experiment.examples)

    def prior(d: Direction, examples: int) -> float:
        m = examples / unit + 1.0
        at_batch, plain = curves.get(opening_curve(d)), curves.get(d.label())
        # Past a batch-N curve's horizon (they were measured to 3x), the batch-8 curve, longer.
        curve = at_batch if at_batch and (not plain or m <= at_batch.horizon) else plain
        if d.mix or d.method != "sft" or curve is None or not curve.points:
            return -1.0
        return curve.score_at(m)

    return prior
