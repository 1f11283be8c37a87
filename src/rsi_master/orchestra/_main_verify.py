"""The verifiers and nominations `PolicyMain` is configured with (`_main_parts`).

Reviewer-backed (the policy's own): a candidate is verified when a finished cross-Worker review
passed its Worker, ranked by its `review` score; the Main asks for a review once two Workers
finalized with candidates no review covered (late in the budget, one, compared with the best
verified Worker); at the end the three best reviewed candidates are nominated.

Claims as verified (the bench's no-Reviewer ablations): a Worker's claimed `dev` score stands in
for the review, no review is ever asked for, and a claimed direction is not held to the budget
share of an unreviewed one (the claim stands in for the review this Main never asks for). The
Main then continues, combines and ranks claimed checkpoints as the full policy does verified
ones: without that the ablation never trained a checkpoint further, a handicap beyond the missing
Reviewer. It nominates the three best claims, or, as the Main's own pick (`MainPick`, the
RSI-Master paper's setting), every Worker's candidate in the order of their claims.
"""

from __future__ import annotations

from ..expos import Added
from . import _reports as reports
from ._graph import ResearchGraph
from ._main_parts import Candidate, Plan, decide, free_id
from ._main_ranking import review_scores, tie_breaks
from ._protocols import MainContext

__all__ = ["ClaimsNomination", "ClaimsVerifier", "MainPick", "ReviewNomination", "ReviewVerifier", "claims"]


class ReviewVerifier:
    """Verified means: a passing cross-Worker review covered the candidate's Worker."""

    def verified(self, ctx: MainContext, graph: ResearchGraph, tie_s: float) -> list[Candidate]:
        """Every candidate a finished review verified (`reports.cleared`), best review score first. Ties (scores
        tie at zero until a lineage has seen enough data) go to the lineage expected to reach
        more with more training (`tie_breaks`), then to the one with more training behind it,
        then to the oldest."""
        passed = reports.cleared(graph)
        scores, trained = review_scores(ctx)
        out = []
        for w in graph.workers.values():
            if w.id not in passed:
                continue
            for xid in reports.candidates(w):
                if xid in scores:
                    out.append(Candidate(xid, w.id, scores[xid][0], scores[xid][1]))
        tie = tie_breaks(ctx, graph, trained, tie_s)

        def rank(c: Candidate) -> tuple[float, float, int, str]:
            p, n = tie(c.experiment_id, graph.workers[c.worker_id].direction)
            return -c.score, -p, -n, c.experiment_id

        return sorted(out, key=rank)

    def request(self, ctx: MainContext, graph: ResearchGraph, late: bool, tie_s: float) -> Plan | None:
        covered = {w for r in graph.reviewers.values() if r.cross_worker for w in r.scope}
        open_ = [w for w in graph.workers.values() if w.done and w.id not in covered and reports.candidates(w)]
        if not (len(open_) >= 2 or (late and open_)):
            return None
        scope = [w.id for w in open_]
        if len(scope) < 2:  # late: compare with the best verified Worker, for selection
            ranked = self.verified(ctx, graph, tie_s)
            others = [w.id for w in graph.workers.values() if w.done and w.id not in scope and reports.candidates(w)]
            partner = ranked[0].worker_id if ranked else (others[-1] if others else None)
            if partner is None:
                return None
            scope.append(partner)
        rid = free_id(graph, "r")
        ev = [w.finalize_seq for w in open_ if w.finalize_seq is not None]
        seq = ctx.call_as(
            Added,
            "review.request",
            {
                "reviewer_id": rid,
                "scope": scope,
                "question": f"Do the claims of {', '.join(scope)} hold on the evaluation records, which of their "
                "candidates is best on review sample by sample, and is any of them flagged?",
            },
        ).seq
        why = f"{', '.join(scope)} finalized with candidates no cross-Worker review has checked" + (
            "; late in the budget: comparison and selection" if late else ""
        )
        return Plan("verify", why, [*ev, seq], {"reviewer": rid, "scope": scope})

    def stands_for_review(self, graph: ResearchGraph, direction_key: str) -> bool:
        return False  # only a passing review does (`ResearchGraph.verified_keys`)


class ReviewNomination:
    """The three best candidates on `review`, for the harness's selection."""

    def nominate(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None:
        scored, _ = review_scores(ctx)
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1][0], kv[0]))[:3]
        for xid, _ in ranked:
            ctx.call("candidate.nominate", {"experiment_id": xid})
        ev = sorted(
            {s for _, (_, s) in ranked} | {r.report_seq for r in graph.reviewers.values() if r.report_seq is not None}
        )
        decide(
            ctx,
            "stop",
            f"{reason}; nominated for the harness's selection on review: "
            f"{', '.join(f'{x} ({s:.3f})' for x, (s, _) in ranked) or 'none reviewed'}",
            ev,
            {"nominated": [x for x, _ in ranked]},
        )


def claims(graph: ResearchGraph) -> dict[str, tuple[float, str, int]]:
    """Experiment -> (claimed dev score, Worker, finalize seq), for every claim of a finalized Worker."""
    out = {}
    for w in graph.workers.values():
        for c in w.finalize.claims if w.finalize else []:
            out[c.experiment_id] = (c.score, w.id, w.finalize_seq or 0)
    return out


class ClaimsVerifier:
    """Verified means: claimed in a Worker's summary; no review is asked for."""

    def verified(self, ctx: MainContext, graph: ResearchGraph, tie_s: float) -> list[Candidate]:
        """Every claimed candidate, best claimed dev score first."""
        return sorted(
            (Candidate(xid, wid, score, seq) for xid, (score, wid, seq) in claims(graph).items()),
            key=lambda c: (-c.score, c.experiment_id),
        )

    def request(self, ctx: MainContext, graph: ResearchGraph, late: bool, tie_s: float) -> Plan | None:
        return None

    def stands_for_review(self, graph: ResearchGraph, direction_key: str) -> bool:
        return direction_key in {graph.workers[w].direction.key() for _, w, _ in claims(graph).values()}


class ClaimsNomination:
    """The three best claimed candidates."""

    def nominate(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None:
        ranked = sorted(claims(graph).items(), key=lambda kv: (-kv[1][0], kv[0]))[:3]
        for xid, _ in ranked:
            ctx.call("candidate.nominate", {"experiment_id": xid})
        decide(
            ctx,
            "stop",
            f"{reason}; nominated by claimed dev score: "
            f"{', '.join(f'{x} ({s:.3f})' for x, (s, _, _) in ranked) or 'none claimed'}",
            sorted({seq for _, (_, _, seq) in ranked}),
            {"nominated": [x for x, _ in ranked]},
        )


class MainPick:
    """The Main's own pick: the candidate of the Worker whose claimed `dev` score is highest. Every
    Worker's candidate is nominated in the order of their claims, so that the simulated bench
    (`bench._simrecord`) returns the first nomination the audit does not flag, instead of the
    harness's re-selection on `review`: a claim that is not its candidate's record costs what it
    costs, and a guarded configuration never returns a checkpoint the audit flagged (the Main's
    pick alone returned flagged merge and format hacks in a quarter of the `agents` campaigns)."""

    def nominate(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None:
        ranked = sorted(
            (
                (c.score, w.id, w.finalize.candidates[0], w.finalize_seq or 0)
                for w in graph.workers.values()
                if w.finalize and w.finalize.candidates
                for c in w.finalize.claims[:1]
            ),
            key=lambda t: (-t[0], t[2]),
        )
        for _, _, xid, _ in ranked:
            ctx.call("candidate.nominate", {"experiment_id": xid})
        pick = ranked[0] if ranked else None
        decide(
            ctx,
            "stop",
            f"{reason}; the Main's pick: "
            + (f"{pick[2]}, candidate of {pick[1]}, who claims {pick[0]:.3f}" if pick else "none claimed")
            + (f"; then, in claim order: {', '.join(x for _, _, x, _ in ranked[1:])}" if len(ranked) > 1 else ""),
            sorted({t[3] for t in ranked}),
            {"nominated": [t[2] for t in ranked], "pick": pick[2] if pick else None},
        )
