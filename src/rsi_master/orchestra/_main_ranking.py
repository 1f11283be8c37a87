"""The Main policy's rankings: which fresh directions open first, and which verified
checkpoints lead (review score, then what the lineage is expected to reach with more training,
then the training behind it).

Without a prior (the default) the opening order is a permutation drawn from the run's seed
(nothing tells the directions apart before they are measured) after the one direction a task
says anyone opens with (`TaskHints.opens_with`: SFT on a task directory's train pool), and a lineage's outlook is its
direction's own learning curve extrapolated (`_evidence`). With a prior (`--prior FILE`, a
landscape the user supplies) the landscape's curves rank the openings at this campaign's
compute, its data selections are directions of their own, the task's `opening_order` hint
breaks their ties, and the curve of a lineage's direction gives its outlook."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..expos import GraphView
from ..landscape import expected_scores, load
from ..tasks import task_hints
from . import _reports as reports
from ._directions import Direction, default_directions, opening_curve, subset_direction
from ._evidence import TRAINING_FRACTION, Evidence
from ._graph import ResearchGraph, ReviewerNode
from ._main_budget import BudgetRule
from ._main_parts import Candidate, Lead, Verifier
from ._memory import lineage_examples
from ._prior import run_prior
from ._protocols import MainContext

if TYPE_CHECKING:
    from ..landscape import Landscape

__all__ = ["PAYS", "TRAINING_FRACTION", "Ranking", "expected_scores", "landscape_prior", "review_scores", "tie_breaks"]

# An expected score a prior's curves tell from zero: 4 of 200 items, twice the
# spread of a one-run score near 1% (about +-0.7 points on 200 items).
PAYS = 0.02


@dataclass(frozen=True)
class Ranking:
    """The ranking rules of `PolicyMain`, one of its parts, over its budget rules and its verifier:
    the openings, the verified checkpoints, the order to continue them in, a review's leader."""

    budget: BudgetRule
    verifier: Verifier

    def fresh_directions(self, ctx: MainContext, graph: ResearchGraph) -> list[Direction]:
        task = ctx.expos.task
        tried = {w.direction.key() for w in graph.workers.values()}
        land = run_prior(ctx.expos.reader)
        if land is None:
            # No prior: nothing tells the task's families apart before they are measured, so the
            # order is a permutation of them drawn from the run's seed (a fixed order, say by
            # name, would favour the same family in every campaign), and the evidence decides
            # from there (`_evidence`, `Plans.weighed`, `continuations`).
            dirs = default_directions(task, seed=ctx.seed)
            random.Random(f"open:{ctx.seed}").shuffle(dirs)
            # Except the direction the task says anyone opens with (its family's usual method).
            first = task_hints(task).opens_with
            usual = next((d for d in default_directions(task, seed=ctx.seed) if d.family == first), None)
            if usual is not None:
                dirs.sort(key=lambda d: d.key() != usual.key())
            return [d.model_copy(update={"seconds": self.budget.allowance(ctx)}) for d in dirs if d.key() not in tried]
        return self._prior_openings(ctx, land, tried)

    def _prior_openings(self, ctx: MainContext, land: Landscape, tried: set[str]) -> list[Direction]:
        """The openings a prior ranks: its curves' expected scores at this campaign's compute."""

        task = ctx.expos.task
        curves = land.curves(task.name)
        # Tie-break of the opening order, and the whole order for a task the landscape has no
        # curves for: the task's own (`TaskHints.opening_order`, a finding of the prior's kind).
        prior = task_hints(task).opening_order
        # One direction's share of the slot-seconds, the part of it that trains.
        expected = expected_scores(task.name, TRAINING_FRACTION * self.budget.share * ctx.budget_s * ctx.slots, land)
        if expected and max(expected.values()) < PAYS:
            # No direction pays on its share of this campaign: rank them by what the campaign's
            # whole training would buy, so that the one that turns soonest opens first and its
            # lineage is the one trained further. Below PAYS the curves' order is noise.
            expected = expected_scores(task.name, TRAINING_FRACTION * ctx.budget_s * ctx.slots, land)
        # The task's families, and the data selections the landscape measured (its curves
        # labelled `family[knob=value]`): a selection that learns early opens a short campaign,
        # and ranks below the full family once the campaign affords what the curves show the
        # full family reaching past it (the selection's ceiling).
        families = default_directions(task, seed=ctx.seed, curves=curves)
        subsets = [
            s for s in (subset_direction(task, label, families, curves) for label in sorted(expected)) if s is not None
        ]
        # A direction is ranked by the curve of the batch size it opens at, where one was measured.
        dirs = sorted(
            [*families, *subsets],
            key=lambda d: (
                -expected.get(opening_curve(d), expected.get(d.label(), -1.0)),
                prior.index(d.family) if d.family in prior else len(prior),
                d.label(),
            ),
        )
        return [d.model_copy(update={"seconds": self.budget.allowance(ctx)}) for d in dirs if d.key() not in tried]

    def verified(self, ctx: MainContext, graph: ResearchGraph) -> list[Candidate]:
        """The candidates the Main builds on, best first (`verifier`, with ties broken at a
        Worker's allowance of training)."""
        return self.verifier.verified(ctx, graph, self.budget.worker_fraction * ctx.budget_s)

    def continuations(self, ctx: MainContext, graph: ResearchGraph) -> list[Candidate]:
        """The verified candidates in the order the Main would train them further. With a prior,
        `verified`'s (review score first). Without one, lineages no running Worker trains
        first (a second Worker on one lineage mostly repeats the first), then by the expected
        gain of one more Worker allowance over the best verified score (`Forecast.gain`: its
        direction's curve extrapolated from the lineage), then `verified`'s order: an early
        leader whose curve has flattened gives way to a lineage still climbing or barely tried.
        Without a prior a verified checkpoint is dropped when a verified descendant of it scored
        at least as well on review: continuing the ancestor would redo what the descendant
        already trained (valued at the training left in the run, a lineage's checkpoints are
        worth about the same, and a Worker had restarted a late-rising lineage from its oldest
        checkpoint while the newest waited for its review)."""
        ranked = self.verified(ctx, graph)
        if run_prior(ctx.expos.reader) is not None or len(ranked) < 2:
            return ranked
        evidence, seconds = Evidence(ctx, graph), self.horizon_s(ctx)
        score = {c.experiment_id: c.score for c in ranked}
        dominated: set[str] = set()
        for xid, _, s, _ in ranked:
            seen, x = {xid}, evidence.trained.get(xid, ("base", {}))[0]
            while x in evidence.trained and x not in seen:
                seen.add(x)
                if x in score and s >= score[x]:
                    dominated.add(x)
                x = evidence.trained[x][0]
        ranked = [c for c in ranked if c.experiment_id not in dominated]
        best = max(c.score for c in ranked)
        busy = {w.direction.key() for w in graph.workers.values() if not w.done}
        value = {
            c.experiment_id: evidence.checkpoint_outlook(
                c.experiment_id, graph.workers[c.worker_id].direction, seconds
            ).gain(best)
            for c in ranked
        }
        # stable: ties keep `verified`'s order
        return sorted(
            ranked, key=lambda c: (graph.workers[c.worker_id].direction.key() in busy, -value[c.experiment_id])
        )

    def horizon_s(self, ctx: MainContext) -> float:
        """The training an option is valued at: what a lineage could still get if the run
        committed to it (the time left before the last comparison), at least one allowance. A
        lineage is built over several Workers; valued at one Worker's allowance, a direction
        whose curve turns late looks no better than an early leader that has flattened."""
        left = ctx.budget_s - ctx.spent_s() - self.budget.reserve_s(ctx)
        return max(self.budget.allowance(ctx), left)

    def leader(self, ctx: MainContext, graph: ResearchGraph, r: ReviewerNode) -> Lead | None:
        """The best candidate in review `r`'s scope, on `review`."""
        scores, trained = review_scores(ctx)
        scoped = [
            Lead(xid, scores[xid][0], w)
            for w in (graph.workers.get(wid) for wid in r.scope)
            if w
            for xid in reports.candidates(w)
            if xid in scores
        ]
        # The first of the best (review score, then the lineage's outlook, then training behind
        # it). The outlook only breaks ties of review scores: measured evidence first. It
        # matters at zero, where without it a short run can continue a flat family's lineage
        # over one of equal training whose curve is about to climb.
        tie = tie_breaks(ctx, graph, trained, self.budget.worker_fraction * ctx.budget_s)
        return max(scoped, key=lambda c: (c.score, *tie(c.experiment_id, c.worker.direction)), default=None)


def review_scores(ctx: MainContext) -> tuple[dict[str, tuple[float, int]], dict[str, tuple[str, dict[str, Any]]]]:
    """From one graph view: experiment -> (review score, eval record seq), and experiment ->
    (parent, training config) for `lineage_examples`."""
    view = ctx.call_as(GraphView, "graph.read")
    experiments = ctx.expos.projection().state.experiments
    out = {}
    for x in view.experiments:
        if x.get("review_score") is not None:
            evals = experiments[x["experiment_id"]].records() if x["experiment_id"] in experiments else []
            out[x["experiment_id"]] = (
                float(x["review_score"]),
                next((e.seq for e in evals if e.split == "review"), 0),
            )
    trained = {x["experiment_id"]: (x["parent"], x.get("config") or {}) for x in view.experiments}
    return out, trained


def tie_breaks(
    ctx: MainContext, graph: ResearchGraph, trained: dict[str, tuple[str, dict[str, Any]]], seconds: float
) -> Callable[[str, Direction], tuple[float, int]]:
    """What breaks a tie of review scores, for a checkpoint and its Worker's direction: the
    lineage's outlook, then the examples behind it. The outlook is the prior's curve for the
    lineage (`landscape_prior`) where the run has a prior, else the forecast of its direction's
    own learning curve after `seconds` more of a Worker (`Evidence`), at the resolution of a
    score: two lineages at zero tie, and the one with more training behind it is built on."""
    land = run_prior(ctx.expos.reader)
    if land is not None:
        prior = landscape_prior(ctx.expos.contract.task, land)
    else:
        evidence = Evidence(ctx, graph)

        def prior(d: Direction, examples: int) -> float:
            return evidence.resolved(evidence.outlook(d, float(examples), seconds))

    def tie(xid: str, d: Direction) -> tuple[float, int]:
        n = lineage_examples(trained, xid)
        return prior(d, n), n

    return tie


def landscape_prior(task: str, landscape: Landscape | None = None) -> Callable[[Direction, int], float]:
    """(direction, lineage examples) -> what the landscape's curve of the direction's family
    (its data selection included, at the batch size its first trial trained at where the
    landscape measured that batch: `opening_curve`) reaches after one more default experiment
    on top of those examples; -1 without a curve (a mix, another method, an unmeasured
    family). `landscape` defaults to the file in force (`landscape.load()`); it is read once
    per call of this function, not once per candidate ranked."""

    landscape = landscape if landscape is not None else load()
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
