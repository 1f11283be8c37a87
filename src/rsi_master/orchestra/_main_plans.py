"""The Main policy's plans, one per kind of decision: verify, revise, combine (a branch that
mixes two verified recipes), branch (an unexplored direction) and continue; each returns a
`Plan` (its Workers already added) or None when it has nothing to add. `Plans` is one of
`PolicyMain`'s parts, over its budget rules, verifier and ranking."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..events import Combine, Continue, Hyperparameters, Recipe, Revise
from ..expos import Added
from . import _reports as reports
from ._directions import Direction, Range
from ._evidence import UNSEEN_STD, Evidence
from ._graph import ResearchGraph, ReviewerNode, WorkerNode
from ._guidance import guided_by, names
from ._main_budget import BudgetRule
from ._main_late import late_worth
from ._main_parts import Plan, PlanStep, Verifier, free_id
from ._main_ranking import Ranking
from ._main_verify import ClaimsVerifier
from ._protocols import MainContext
from ._seeds import continue_seed, redo_seed, worker_seed

__all__ = ["Plans"]


@dataclass(frozen=True)
class Plans:
    """The plans of `PolicyMain`: each a `PlanStep` (`revise`, `combine`, `branch`,
    `continue_lineage`; `verify` and `redo_failed` come before them), and the order the run's
    evidence ranks them in (`weighed`)."""

    budget: BudgetRule
    verifier: Verifier
    ranker: Ranking

    @property
    def default_order(self) -> tuple[PlanStep, ...]:
        """The order with a prior, or before a review passed: the reviews' recommendations first."""
        return (self.revise, self.combine, self.branch, self.continue_lineage)

    def openings(self, ctx: MainContext, graph: ResearchGraph) -> list[Direction]:
        """The unexplored directions in the order the ranker opens them, without those the operator
        avoids, preferred ones first."""
        view = guided_by(ctx.expos.projection())
        dirs = [d for d in self.ranker.fresh_directions(ctx, graph) if not names(d) & view.avoided]
        rank = {name: i for i, name in enumerate(view.preferred)}
        return sorted(dirs, key=lambda d: min((rank[n] for n in names(d) if n in rank), default=len(rank)))

    def capped(self, ctx: MainContext, graph: ResearchGraph, d: Direction) -> bool:
        """The direction took its budget share without verification (`BudgetRule.capped`): a passing
        cross-Worker review, or what the verifier counts as one."""
        reviewed = d.key() in graph.verified_keys() or self.verifier.stands_for_review(graph, d.key())
        return self.budget.capped(ctx, graph, d, reviewed)

    def verify(self, ctx: MainContext, graph: ResearchGraph, late: bool) -> Plan | None:
        return self.verifier.request(ctx, graph, late, self.budget.worker_fraction * ctx.budget_s)

    def weighed(self, ctx: MainContext, graph: ResearchGraph) -> tuple[tuple[PlanStep, ...], str]:
        """The plans in the order the run's evidence ranks them (no prior), and the figures that
        decided it (for the decision's rationale).

        Each option is valued by its expected gain over the best verified review score after one
        more Worker allowance (`Forecast.gain`: the lineage's direction's curve extrapolated):
        answering a review's critique (`continue exp-...`) is worth what more training of that
        checkpoint is, continuing is worth what the best free verified lineage is, and an
        unexplored direction or a combination of two verified recipes (a new direction too) is
        worth `Evidence.unexplored` (nothing when every opening is open or capped: `branch` would
        open none). A critique is thus answered when its lineage is where the
        evidence says the next allowance pays most, not before every other option: answering
        every critique first would keep continuing the review's leader after it flattened,
        while a direction still climbing waits (as on simulated worlds whose best direction
        rises late). Unexplored families open before combinations of the explored ones. Before
        anything is verified, directions open first."""
        ranked = self.ranker.continuations(ctx, graph)
        if not ranked or not any(r.done and reports.verdict(r) == "pass" for r in graph.reviewers.values()):
            return self.default_order, ""
        evidence, seconds = Evidence(ctx, graph), self.ranker.horizon_s(ctx)
        best = max(c.score for c in ranked)
        taken = {w.direction.parent for w in graph.workers.values() if not w.done} | reports.stopped(graph)
        free = [c for c in ranked if c.experiment_id not in taken and c.worker_id not in taken]

        def gain(xid: str, w: WorkerNode) -> float:
            return evidence.checkpoint_outlook(xid, w.direction, seconds).gain(best)

        # An unexplored direction is worth something only when `branch` could open one: with every
        # opening already open or capped it is no option, and the rationale does not price it.
        can_open = any(not self.capped(ctx, graph, d) for d in self.openings(ctx, graph))
        fresh = evidence.unexplored(seconds, best) if can_open else -1.0
        cont = gain(free[0].experiment_id, graph.workers[free[0].worker_id]) if free else -1.0
        target = self.critique_target(ctx, graph)
        crit = gain(target[0], target[1]) if target is not None and target[0] not in taken else -1.0
        # A combination trains a verified lineage further on a mix: each source gets about half the
        # data, so it is valued as that lineage at half the training, widened by an unseen direction's
        # spread (whether two families interact is as unknown before they are mixed: docs/orchestra.md).
        pair = self.combine_target(ctx, graph)
        comb = (
            evidence.checkpoint_outlook(pair[0], pair[1].direction, seconds / 2).gain(best, widen=UNSEEN_STD)
            if pair is not None and pair[0] not in taken
            else -1.0
        )
        options: list[tuple[float, int, PlanStep]] = [
            (crit, 3, self.revise),
            (cont, 2, self.continue_lineage),
            (fresh, 1, self.branch),
            (comb, 0, self.combine),
        ]
        order = tuple(plan for _, _, plan in sorted(options, key=lambda o: (-o[0], -o[1])))
        priced = [
            *([f"critique of {target[0]} {crit:.4f}"] if target is not None else []),
            *([f"{free[0].experiment_id} {cont:.4f}"] if free else []),
            *([f"combination from {pair[0]} {comb:.4f}"] if pair is not None else []),
            *([f"an unexplored direction {fresh:.4f}"] if can_open else []),
        ]
        note = (f"expected gain over {best:.3f} after {seconds:.0f} s more: " + ", ".join(priced)) if priced else ""
        return order, note

    def redo_failed(self, ctx: MainContext, graph: ResearchGraph) -> Plan | None:
        """`revise` for failed reviews only: claims that did not hold are answered first."""
        return self.revise(ctx, graph, failed_only=True)

    def critique_target(self, ctx: MainContext, graph: ResearchGraph) -> tuple[str, WorkerNode] | None:
        """(checkpoint, Worker) the first unanswered critique of a passing review asks to train
        further (`continue exp-...`), as `revise` would answer it; None when there is none."""
        for r in sorted(graph.reviewers.values(), key=lambda r: r.report_seq or 0):
            if not r.done or reports.verdict(r) == "fail" or _acted(graph, r.report_seq, "revise"):
                continue
            if not any(isinstance(x, Continue) and reports.carried(x) for x in reports.recommendations(r)):
                continue
            lead = self.ranker.leader(ctx, graph, r)
            if lead is None or {lead.experiment_id, lead.worker.id} & reports.stopped(graph):
                continue
            return lead.experiment_id, lead.worker
        return None

    def revise(self, ctx: MainContext, graph: ResearchGraph, failed_only: bool = False) -> Plan | None:
        """Answer a review: a failed one by redoing a direction in scope from the base, a passing
        one's critique of its leader (`continue exp-...`) by training the leader further."""
        for r in sorted(graph.reviewers.values(), key=lambda r: r.report_seq or 0):
            if not r.done or _acted(graph, r.report_seq, "revise"):
                continue
            recs = reports.recommendations(r)
            if failed_only and reports.verdict(r) != "fail":
                continue
            if reports.verdict(r) == "fail":
                # The critique is that the claims do not hold: re-run a direction in scope from the
                # base, on fresh data, and let a later review check it: the one the review says to
                # revise, else the first in scope.
                named = [x.worker_id for x in recs if isinstance(x, Revise)]
                w = next((graph.workers[s] for s in [*named, *r.scope] if s in graph.workers), None)
                if w is None:
                    continue
                d = w.direction.model_copy(
                    update={"parent": "base", "mix": [], "enqueue": [], "seed": redo_seed(w.direction.seed)}
                )
                wid = self.add(
                    ctx,
                    graph,
                    d,
                    f"answer review {r.id}: its claims did not hold "
                    f"({'; '.join(reports.violations(r)[:2]) or 'no candidate reviewed'})",
                    [],
                )
                return Plan(
                    "revise",
                    f"review {r.id} failed; {wid} redoes {d.key()} from the base",
                    _seqs(r.report_seq),
                    {"worker": wid, "review": r.id, "answers": r.report_seq},
                )
            crit = [x for x in recs if isinstance(x, Continue) and reports.carried(x)]
            if not crit:
                continue
            lead = self.ranker.leader(ctx, graph, r)
            if lead is None:
                continue
            xid, score, w = lead
            if {xid, w.id} & reports.stopped(graph):
                continue
            note = next((c for c in crit if c.experiment_id == xid), crit[0]).text()
            d = continue_direction(w.direction, reports.recipe(w), xid)
            if self.capped(ctx, graph, d):
                continue
            wid = self.add(ctx, graph, d, f"answer review {r.id}: {note}", [w.id])
            return Plan(
                "revise",
                (
                    f"review {r.id} verified {xid} (review {score:.3f}) but critiques it: {note}; "
                    f"{wid} continues it on fresh data with its verified recipe"
                ),
                _seqs(r.report_seq),
                {"worker": wid, "review": r.id, "answers": r.report_seq, "parent": xid},
            )
        return None

    def combinations(
        self, ctx: MainContext, graph: ResearchGraph
    ) -> Iterator[tuple[ReviewerNode | None, str, str, Recipe, Direction]]:
        """(review, a, b, a's recipe, the mixed direction) for each combination a passing review
        recommended and no decision answered yet, in report order: a's verified recipe trained
        further from its checkpoint on a mix of its data and b's. A mix adds a source: b's family
        and knobs already in a's recipe (two Workers on one family's same data) is no combination.
        Then the trial no review recommended (`trial_combination`, review None)."""
        for r in sorted(graph.reviewers.values(), key=lambda r: r.report_seq or 0):
            if not r.done or reports.verdict(r) != "pass" or _acted(graph, r.report_seq, "branch"):
                continue
            # A combination whose complementarity test does not carry it is noise: not acted on.
            combos = [x.worker_ids for x in reports.recommendations(r) if isinstance(x, Combine) and reports.carried(x)]
            for a, b in combos:
                wa, wb = graph.workers.get(a), graph.workers.get(b)
                ra = reports.recipe(wa) if wa else None
                rb = reports.recipe(wb) if wb else None
                if not (wa and wb and ra and rb) or {a, b, ra.experiment_id} & reports.stopped(graph):
                    continue
                sources = [(ra.family, ra.params), *((m.family, m.params) for m in ra.mix)]
                if (rb.family, rb.params) in sources:
                    continue  # b's data is already in a's recipe: mixing it in again changes nothing
                d = _mixed(wa.direction, ra, rb)
                if self.capped(ctx, graph, d):
                    continue
                yield r, a, b, ra, d
        yield from self.trial_combination(ctx, graph)

    def trial_combination(
        self, ctx: MainContext, graph: ResearchGraph
    ) -> Iterator[tuple[None, str, str, Recipe, Direction]]:
        """The combination tried although no review recommended it: the best claimed checkpoint's
        recipe trained further on a mix with the best claimed recipe of a family it does not hold,
        each set of families once in a run. Which families interact shows only once they are mixed
        (docs/orchestra.md, "Trial combinations"). A trial is exploration: it draws on the Workers'
        claims, not only on reviewed checkpoints (waiting for two families' passing reviews tried
        fewer combinations, later), and is continued or returned only if its verified score ranks."""
        ranked = [c for c in ClaimsVerifier().verified(ctx, graph, 0.0) if c.worker_id in graph.workers]
        if not ranked:
            return
        stopped = reports.stopped(graph)
        tried = {_families(w.direction) for w in graph.workers.values() if w.direction.mix}
        wa = graph.workers[ranked[0].worker_id]
        ra = reports.recipe(wa)
        if ra is None or {wa.id, ra.experiment_id} & stopped:
            return
        held = {ra.family, *(m.family for m in ra.mix)}
        for c in ranked[1:]:
            wb = graph.workers[c.worker_id]
            rb = reports.recipe(wb)
            if rb is None or rb.mix or rb.family in held or {wb.id, rb.experiment_id} & stopped:
                continue
            d = _mixed(wa.direction, ra, rb)
            if _families(d) in tried or self.capped(ctx, graph, d):
                continue
            yield None, wa.id, wb.id, ra, d
            return

    def combine_target(self, ctx: MainContext, graph: ResearchGraph) -> tuple[str, WorkerNode] | None:
        """(checkpoint, Worker) the first pending combination trains further, or None."""
        for _, a, _, ra, _ in self.combinations(ctx, graph):
            return ra.experiment_id, graph.workers[a]
        return None

    def combine(self, ctx: MainContext, graph: ResearchGraph) -> Plan | None:
        """A Worker for the first combination a passing review recommended (`combinations`)."""
        for r, a, b, ra, d in self.combinations(ctx, graph):
            rb_family = d.mix[-1]["family"]
            if r is None:
                wid = self.add(ctx, graph, d, f"try combining the claimed recipes of {a} and {b}", [a, b])
                return Plan(
                    "branch",
                    f"trial: {wid} mixes {rb_family} data (of {b}) into the best claimed recipe, {ra.family} from "
                    f"{ra.experiment_id} (of {a}): never mixed in this run; it is continued only if it ranks",
                    _seqs(graph.workers[a].finalize_seq) + _seqs(graph.workers[b].finalize_seq),
                    {"worker": wid, "combines": [a, b], "trial": True},
                )
            wid = self.add(ctx, graph, d, f"combine the verified findings of {a} and {b} (review {r.id})", [a, b])
            return Plan(
                "branch",
                (
                    f"review {r.id} found {a} and {b} complementary on review samples; {wid} mixes "
                    f"{ra.family} and {rb_family} data from {ra.experiment_id}"
                ),
                _seqs(r.report_seq),
                {"worker": wid, "combines": [a, b], "review": r.id},
            )
        return None

    def branch(self, ctx: MainContext, graph: ResearchGraph) -> Plan | None:
        """A Worker on the first opening not capped, citing the operator guidance that chose it
        (a preference, or avoided directions passed over)."""
        for d in self.openings(ctx, graph):
            if not self.capped(ctx, graph, d):
                wid = self.add(ctx, graph, d, f"{d.key()} from the base model", [])
                plan = Plan("branch", f"unexplored direction {d.key()}", [], {"worker": wid})
                view = guided_by(ctx.expos.projection())
                cited = {view.seqs[n] for n in names(d) if n in view.preferred} | {view.seqs[n] for n in view.avoided}
                if cited:
                    plan = plan.noted(f" (operator guidance {', '.join(str(s) for s in sorted(cited))})", sorted(cited))
                return plan
        return None

    def continue_lineage(self, ctx: MainContext, graph: ResearchGraph, late: bool = False) -> Plan | None:
        """A Worker training the best verified checkpoint further."""
        # The best verified checkpoint that no running Worker already trains further (a revise,
        # say); the next best when it is taken, so that an idle slot is not left idle while
        # another verified lineage could use it; late in the budget, only one that can still
        # matter (`late_worth`).
        # A lineage a review said to stop is not continued.
        taken = {w.direction.parent for w in graph.workers.values() if not w.done} | reports.stopped(graph)
        ranked = self.ranker.continuations(ctx, graph)
        worth = late_worth(ctx, graph, ranked, self.budget.allowance(ctx)) if late else None
        for xid, wid0, score, seq in ranked:
            if xid in taken or wid0 in taken:
                continue
            if worth is not None and worth(xid, graph.workers[wid0]) is not None:
                continue
            w = graph.workers[wid0]
            d = continue_direction(w.direction, reports.recipe(w), xid)
            if self.capped(ctx, graph, d):
                continue
            wid = self.add(ctx, graph, d, f"continue the verified checkpoint {xid}", [wid0])
            return Plan(
                "continue",
                f"{xid} of {wid0} is the best verified checkpoint no Worker trains yet (review "
                f"{score:.3f}); {wid} trains it further",
                [seq],
                {"worker": wid, "parent": xid},
            )
        return None

    def add(self, ctx: MainContext, graph: ResearchGraph, d: Direction, task: str, preds: list[str]) -> str:
        """Add a Worker of `d` (its allowance, the run's Worker agent and a seed of its own set here)
        to the ledger and to `graph`; its id."""
        wid = free_id(graph, "w")
        # Every Worker its own seed, so no two draw the same data: two Workers continuing one
        # checkpoint with one recipe and seed would train the same weights, which the audit
        # rightly flags as one checkpoint scored twice on dev (repeated-run selection).
        seed = worker_seed(int(wid[1:]), d.seed)
        d = d.model_copy(update={"seconds": self.budget.allowance(ctx, d), "agent": ctx.worker, "seed": seed})
        seq = ctx.call_as(
            Added,
            "worker.add",
            {"worker_id": wid, "task": task, "direction": d.model_dump(mode="json"), "predecessors": preds},
        ).seq
        graph.workers[wid] = WorkerNode(wid, seq, task, d, preds)  # visible to the rest of this event
        return wid


def continue_direction(d: Direction, recipe: Recipe | None, parent: str) -> Direction:
    """The verified recipe, fixed, trained further from its checkpoint: its own learning rate
    first, then TPE down to half of it.

    Not lower: on the built-in suite's measured curves (docs/tasks.md, "What the figures
    say") scores start to move only after one to three default experiments of data, and a
    lower rate takes longer to get there than a campaign has."""
    params = recipe.params if recipe else {}
    cfg = recipe.config if recipe else Hyperparameters()
    knobs = {k: (Range(kind="fixed", value=params[k]) if k in params else r) for k, r in d.knobs.items()}
    lr = max(1e-5, float(cfg.learning_rate or 1e-3))
    train = dict(d.train)
    train["learning_rate"] = Range(kind="float", low=max(1e-5, lr / 2), high=lr, log=True)
    # The verified learning rate and batch size are TPE's first trial (within the ranges
    # searched), as long as the Worker's allowance fits: a continuation's first trial adds
    # to the lineage everything its allowance affords, rather than the verified trial's own
    # length again and a shorter sibling after it, since every landscape curve is still
    # rising at 5 default experiments (docs/tasks.md, "Learning curves").
    first: dict[str, Any] = {"t:learning_rate": lr}
    bs, steps = train.get("batch_size"), train.get("max_steps")
    if bs is not None and bs.kind == "choice" and cfg.batch_size in bs.choices:
        first["t:batch_size"] = cfg.batch_size
    if steps is not None and steps.kind == "int" and steps.high is not None:
        first["t:max_steps"] = int(steps.high)
    return d.model_copy(
        update={"knobs": knobs, "train": train, "parent": parent, "enqueue": [first], "seed": continue_seed(d.seed)}
    )


def _mixed(d: Direction, ra: Recipe, rb: Recipe) -> Direction:
    """a's recipe (verified, or claimed for a trial) trained further from its checkpoint on its data mixed with b's."""
    mix = [*(m.model_dump(mode="json") for m in ra.mix), {"family": rb.family, "params": rb.params}]
    return continue_direction(d, ra, ra.experiment_id).model_copy(update={"mix": mix})


def _families(d: Direction) -> frozenset[str]:
    """The families a direction's data holds: its own and those mixed in."""
    return frozenset([d.family, *(str(m.get("family")) for m in d.mix)])


def _acted(graph: ResearchGraph, report_seq: int | None, action: str) -> bool:
    """A decision of `action` answered the review reported at `report_seq`: one whose detail
    names a review (revise and combine do), not any decision taken at that event (an
    unexplored direction opened when the review came in answers none of its findings)."""
    return any(d.action == action and report_seq in d.evidence and "review" in d.detail for d in graph.decisions)


def _seqs(seq: int | None) -> list[int]:
    return [] if seq is None else [seq]
