"""The programmatic Main agent: acts only at orchestration events, only through the
Main tools, and records every decision with its rationale and evidence seqs.

Policy, in order of priority whenever a slot needs work:

1. verify: two or more finalized Workers whose candidates no cross-Worker review has
   covered yet get one (late in the budget a single one is compared with the best
   already verified Worker instead: selection needs comparisons, not new directions);
2. revise: a failed review, or a passing review's critique of the leading checkpoint
   (`continue exp-...`), becomes a new Worker that answers it: continue from the
   verified checkpoint on fresh data with its verified recipe (its learning rate first,
   then down to half of it);
3. branch: a passing review that found complementary Workers (`combine w1 w2`) becomes a
   Worker whose data mixes both verified recipes, starting from the verified leader;
   otherwise an unexplored direction of the task;
4. continue: more of the best verified direction.

That is the order with a prior (`--prior FILE`: its curves rank the openings and break review
ties). Without one (the default) a failed review is still answered first, and 2's critique,
3 and 4 are weighed against each other on the run's own learning curves (`_evidence`,
`Plans.weighed`): each by its expected gain over the best verified review score at the
training a lineage could still get in the time left, so that a critique of an early leader
that has flattened waits while a lineage still climbing, or an unexplored direction, promises
more. Unexplored families open before combinations of explored ones.

A direction may not take more than `share` of the budget before a passing cross-Worker
review covers it. After `late` of the budget verification and selection come first and no
new direction is opened; a slot they leave idle continues the best verified lineage, sized
to end before the time kept for the last comparison. At the end, the reviewed candidates
are nominated and the stop recorded.
"""

from __future__ import annotations

from ._directions import Direction
from ._graph import OrchestraEvent, ResearchGraph
from ._guidance import Guidance, answer_plainly, names
from ._main_budget import BudgetRule
from ._main_parts import Nomination, Plan, PlanStep, Verifier, decide
from ._main_plans import Plans
from ._main_ranking import Ranking, expected_scores, landscape_prior
from ._main_verify import ReviewNomination, ReviewVerifier
from ._prior import run_prior
from ._protocols import MainContext, main_agent

__all__ = ["PolicyMain", "expected_scores", "landscape_prior"]


@main_agent("policy")
class PolicyMain:
    """The policy above: its entry points and the order of its plans here; it is composed of
    parts. Who counts as verified (`Verifier`), what is nominated at the end (`Nomination`) and
    its budget rules (`BudgetRule`) are given: by default the Reviewers' verdicts, the best
    reviewed candidates and the default budget rules; the bench's no-Reviewer ablations give it
    claims as verified and their own nomination (`bench/_mains.py`). Its ranking (`Ranking`)
    and plans (`Plans`) are built over those."""

    def __init__(
        self,
        budget: BudgetRule | None = None,
        *,
        verifier: Verifier | None = None,
        nomination: Nomination | None = None,
    ) -> None:
        self.budget = budget or BudgetRule()
        self.verifier = verifier or ReviewVerifier()
        self.nomination = nomination or ReviewNomination()
        self.ranker = Ranking(self.budget, self.verifier)
        self.plans = Plans(self.budget, self.verifier, self.ranker)

    def openings(self, ctx: MainContext, graph: ResearchGraph) -> list[Direction]:
        """The unexplored directions in the order this Main opens them (`Plans.openings`)."""
        return self.plans.openings(ctx, graph)

    # -- entry points ------------------------------------------------------------------------
    def start(self, ctx: MainContext, graph: ResearchGraph) -> None:
        if graph.workers:
            return
        task = ctx.expos.contract.task
        added = []
        # A budget below one shortest trial is refused before the run is created (`min_budget_s`).
        fitting = [d for d in self.openings(ctx, graph) if self.budget.fits(ctx, d)]
        for d in fitting[: ctx.slots if self.budget.can_add(ctx) else 0]:
            added.append(self.plans.add(ctx, graph, d, f"{d.key()} from the base model", []))
        decide(
            ctx,
            "branch",
            f"open {len(added)} directions of {task} in parallel, one per slot, so that "
            "no single direction locks in the run",
            [0],
            {"workers": added},
        )

    def on_event(self, ctx: MainContext, graph: ResearchGraph, event: OrchestraEvent) -> None:
        seq, kind, node = event
        choice = self.next_plan(ctx, graph)
        if choice is None:
            # Nothing to add: the graph continues as it is. The stop itself is recorded once, by
            # `finish`, when the scheduler ends the run (budget spent or no work left).
            waiting = [w.id for w in graph.workers.values() if not w.done]
            why = (
                f"{kind} of {node} answered; nothing new fits the budget left "
                f"({ctx.fraction_spent():.0%} spent); running: {', '.join(waiting) or 'none'}"
            )
            decide(ctx, "continue", why + self.budget.pace_note(ctx), [seq], {}, answers=seq)
            return
        rationale = choice.rationale + self.budget.pace_note(ctx)
        decide(ctx, choice.action, rationale, sorted({seq, *choice.evidence}), choice.detail, answers=seq)

    def on_idle(self, ctx: MainContext, graph: ResearchGraph, free_slots: int) -> bool:
        choice = self.next_plan(ctx, graph)
        if choice is None:
            return False
        rationale = choice.rationale + " (a slot was idle)" + self.budget.pace_note(ctx)
        decide(ctx, choice.action, rationale, choice.evidence, choice.detail)
        return True

    def finish(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None:
        self.nomination.nominate(ctx, graph, reason)

    def on_guidance(self, ctx: MainContext, graph: ResearchGraph, g: Guidance) -> None:
        """Operator guidance: preferred directions open first and avoided ones never (from now on,
        `openings`); a preferred direction not yet explored opens now if a slot is free;
        a Worker to stop, or a pause, is the scheduler's to carry out and is noted here."""
        p, notes = g.request, []
        action, detail = "continue", {}
        free = ctx.slots - len(graph.pending())
        if p.prefer and free > 0 and ctx.fraction_spent() < self.budget.late and self.budget.can_add(ctx):
            wanted = set(p.prefer)
            for d in self.openings(ctx, graph):
                if names(d) & wanted and not self.plans.capped(ctx, graph, d):
                    wid = self.plans.add(
                        ctx, graph, d, f"{d.key()} from the base model (operator guidance {g.seq})", []
                    )
                    action, detail = "branch", {"worker": wid}
                    notes.append(f"{wid} opens the preferred direction {d.key()}")
                    break
        if p.prefer and action != "branch":
            notes.append(f"{', '.join(p.prefer)} open first when a slot frees")
        if p.avoid:
            notes.append(f"{', '.join(p.avoid)} will not be opened")
        if p.stop_worker:
            action = "revise" if action == "continue" else action
            notes.append(f"{', '.join(p.stop_worker)} stopped: a running Worker finalizes with what it has")
        if p.flow:
            notes.append("no new job launches until resumed" if p.flow == "pause" else "launches go on")
        answer_plainly(ctx, g, action, "; ".join(notes), **detail)

    # -- policy ------------------------------------------------------------------------------
    def next_plan(self, ctx: MainContext, graph: ResearchGraph) -> Plan | None:
        """The decision to take now, its Workers or review already added; None when nothing fits."""
        f = ctx.fraction_spent()
        plans = self.plans
        verify = plans.verify(ctx, graph, late=f >= self.budget.late)
        if verify is not None:
            return verify
        if not self.budget.can_add(ctx):
            return None  # no Worker could finish a single experiment: compare and select only
        if f >= self.budget.late:
            # Late: comparison and selection come first (above); a slot they leave idle trains
            # the best verified lineage further, sized to end before the last comparison,
            # rather than idle to the end.
            return plans.continue_lineage(ctx, graph, late=True)
        redo = plans.redo_failed(ctx, graph)  # claims that did not hold: answered first
        if redo is not None:
            return redo
        first: tuple[PlanStep, ...]
        if run_prior(ctx.expos.reader) is not None:
            # With a prior: the reviews' recommendations, then the prior's openings, as before.
            first, weighed = plans.default_order, ""
        else:
            # Without one, a review's critique, a combination, an unexplored direction and more of
            # a verified lineage are weighed on the run's own evidence (`Plans.weighed`).
            first, weighed = plans.weighed(ctx, graph)
        for plan in first:
            out = plan(ctx, graph)
            if out is not None:
                return out.noted(f"; {weighed}") if weighed else out
        return None
