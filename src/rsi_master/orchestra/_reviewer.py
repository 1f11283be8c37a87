"""The programmatic Reviewer: checks conclusions against ExpOS evidence, never against
the Workers' summaries alone, and recommends only what the evidence carries beyond its noise.

For every Worker in scope: each candidate is scored on `review` with per-sample diagnostics
(`eval.review`), and its lineage's last step is tested for a gain over what it was trained from
(paired on `review` items against a parent experiment, `eval.compare`; against the run's least
trained checkpoints for one trained from the base); each claim is checked against its `dev`
record and against that fresh `review` measurement (how far it exceeds it, and whether that is
outside the noise); the leading candidates of different Workers are compared sample by sample
and tested for complementarity (the items only one of them solves against what their two
scores predict under independence); the integrity audit runs over the candidates (`audit.run`).

A recommendation is made only on a test that carries it at `ALPHA`: `continue` when the last
step gained beyond the noise, `combine` when the complementary items exceed independence, each
with its `Significance`. A review that finds nothing to act on says so (a `nothing` finding).
Every statement is a typed `Finding` (kind, status, ids, evidence seqs, score, significance);
the prose lists beside them are for people and LLM agents.
"""

from __future__ import annotations

from collections.abc import Callable

from ..events import Combine, Continue
from ..expos import AuditView, Comparison, Inspection, ReviewEval, ToolError
from ._briefs import Conclusion
from ._protocols import ReviewerContext, reviewer_agent
from ._review_gain import EVAL_SECONDS, floor_score, last_step
from ._review_report import Report
from ._stats import ALPHA, claim_test, difficulty_strata, stratified_complementarity

__all__ = ["CLAIM_ALPHA", "DIFFICULTY_POOL", "EvidenceReviewer"]

# A claim is flagged as exceeding a fresh measurement only below this p: a Worker's best of
# several trials on `dev` is an honest maximum that exceeds `review` by some noise of its own.
CLAIM_ALPHA = 0.01

# Checkpoints (the latest scored on `review`, other than the two compared) whose outcomes estimate
# each item's difficulty for the complementarity test: enough for a share per item, few enough
# that a review reads a bounded number of records.
DIFFICULTY_POOL = 16


@reviewer_agent("evidence")
class EvidenceReviewer:
    def run(self, ctx: ReviewerContext) -> None:
        scope = list(ctx.brief.scope)
        conclusions = ctx.brief.conclusions
        r = Report()
        floor = floor_score(ctx)
        review: dict[str, tuple[str, float]] = {}  # experiment -> (worker, review score)
        for w in scope:
            c = conclusions.get(w)
            if c is None:
                r.missing_comparisons.append(f"{w} has not finalized: nothing to check")
                continue
            r.evidence.append(c.seq)
            if not c.candidates:
                r.missing_comparisons.append(f"{w} put forward no candidate")
            for cand in c.candidates:
                if ctx.time_left() < EVAL_SECONDS:
                    r.add(
                        "uncertainties",
                        f"{cand} ({w}) not evaluated on review: the budget ran out",
                        "uncertain",
                        "coverage",
                        [cand],
                        [w],
                    )
                    continue
                got = self._review_eval(ctx, w, cand, floor, r)
                if got is not None:
                    review[cand] = (w, got)
            self._claims(ctx, w, c, review, r)
        self._compare(ctx, review, r)
        self._audit(ctx, list(review), r)
        # A claim that does not hold is the Worker's report, not its checkpoint: it is named (and
        # weighs that Worker's claims down, `reports.claim_weights`) but fails nothing; what a
        # candidate's integrity or provenance contradicts fails the review.
        integrity = [f for f in r.findings if f.status == "unsupported" and f.kind != "claim"]
        verdict = "pass" if review and not integrity else "fail"
        unsupported = any(f.status == "unsupported" for f in r.findings)
        if verdict == "pass" and not r.recommendations and not r.regressions and not unsupported:
            r.add(
                "supported",
                f"nothing to act on beyond the evaluation noise among {', '.join(sorted(review))}: no last step "
                f"gained at p < {ALPHA}, no two Workers complementary beyond independence, no claim or audit flag",
                "supported",
                "nothing",
                sorted(review),
                sorted({w for w, _ in review.values()}),
            )
        ctx.call("review.submit", r.submission(ctx.brief.seq, scope, verdict))

    # -- claims --------------------------------------------------------------------------------
    @staticmethod
    def _claims(ctx: ReviewerContext, w: str, c: Conclusion, review: dict[str, tuple[str, float]], r: Report) -> None:
        candidates = set(c.candidates)
        for claim in c.claims:
            xid, score = claim.experiment_id, float(claim.score)
            try:
                insp = ctx.call_as(Inspection, "experiment.inspect", {"experiment_id": xid, "sample_rows": 0})
            except ToolError as exc:
                r.add(
                    "violations",
                    f"{w} claims {xid}={score:.3f} but it cannot be inspected: {exc}",
                    "unsupported",
                    "claim",
                    [xid],
                    [w],
                )
                continue
            dev = next((e for e in insp.evaluations if e.get("split") == "dev"), None)
            if insp.owner != w:
                r.add(
                    "violations", f"{w} claims {xid}, which belongs to {insp.owner}", "unsupported", "claim", [xid], [w]
                )
                continue
            if xid not in candidates:
                r.add(
                    "violations",
                    f"{w} claims {xid}={score:.3f}, a checkpoint it does not put forward (candidates: "
                    f"{', '.join(sorted(candidates)) or 'none'})",
                    "unsupported",
                    "claim",
                    [xid],
                    [w],
                    [int(dev["seq"])] if dev else [],
                )
                continue
            if dev is None:
                r.add(
                    "violations",
                    f"{w} claims {xid}={score:.3f}; it has no dev record",
                    "unsupported",
                    "claim",
                    [xid],
                    [w],
                )
                continue
            recorded, n_dev, seq = float(dev["score"]), int(dev.get("n_samples") or 0), int(dev["seq"])
            # Within half an item of the record is rounding; beyond it the claim is not the record's.
            if abs(score - recorded) > 0.5 / max(1, n_dev) + 1e-9:
                r.add(
                    "violations",
                    f"{w} claims {xid}={score:.3f}; the dev record {seq} says {recorded:.3f} ({score - recorded:+.3f})",
                    "unsupported",
                    "claim",
                    [xid],
                    [w],
                    [seq],
                    "dev",
                    recorded,
                )
                continue
            r.evidence.append(seq)
            fresh = review.get(xid)
            if fresh is None:
                r.add(
                    "supported",
                    f"{w}: {xid} dev {score:.3f} re-derived from eval record {seq}",
                    "supported",
                    "claim",
                    [xid],
                    [w],
                    [seq],
                    "dev",
                    recorded,
                )
                continue
            sig = claim_test(score, n_dev, fresh[1], r.n_review.get(xid, n_dev), "review")
            over = sig.p < CLAIM_ALPHA
            r.add(
                "uncertainties" if over else "supported",
                f"{w}: {xid} dev {score:.3f} re-derived from eval record {seq}; a fresh review measurement "
                f"says {fresh[1]:.3f} ({sig.effect:+.3f}, {sig.effect / sig.noise if sig.noise else 0.0:+.1f} se, "
                f"p={sig.p:.3g}): " + ("the claim exceeds it beyond the noise" if over else "inside the noise"),
                "unsupported" if over else "supported",
                "claim",
                [xid],
                [w],
                [seq, *r.review_seq.get(xid, [])],
                "dev",
                recorded,
                sig,
            )

    # -- one candidate on review: its score, its last step, what is left ------------------------
    @staticmethod
    def _review_eval(ctx: ReviewerContext, w: str, xid: str, floor: float | None, r: Report) -> float | None:
        try:
            rev = ctx.call_as(ReviewEval, "eval.review", {"experiment_id": xid})
            insp = ctx.call_as(Inspection, "experiment.inspect", {"experiment_id": xid, "sample_rows": 0})
        except ToolError as exc:
            r.add(
                "uncertainties",
                f"{xid} ({w}) could not be evaluated on review: {exc}",
                "uncertain",
                "coverage",
                [xid],
                [w],
            )
            return None
        score, n = float(rev.score), len(rev.samples)
        r.evidence.append(int(rev.record_seq))
        r.review_seq[xid], r.n_review[xid] = [int(rev.record_seq)], n
        r.outcomes[xid] = {s.sample_id: s.score >= 1.0 for s in rev.samples}
        wrong = sum(1 for s in rev.samples if s.score < 1.0)
        r.add(
            "supported",
            f"{w}: {xid} review {score:.3f} ({n - wrong}/{n} right, record {rev.record_seq})",
            "supported",
            "score",
            [xid],
            [w],
            [int(rev.record_seq)],
            "review",
            score,
        )
        sig = last_step(ctx, w, xid, insp.parent, score, n, floor, r)
        if sig is None or not wrong:
            return score
        gained = sig.p < ALPHA
        r.add(
            "supported" if gained else "uncertainties",
            f"{xid}'s last step gained {sig.effect:+.3f} over {sig.reference} on review (noise {sig.noise:.3f}, "
            f"p={sig.p:.3g})" + ("" if gained else ": inside the noise, no gain measured"),
            "supported" if gained else "uncertain",
            "gain",
            [xid] if sig.reference in ("base", None) else [xid, str(sig.reference)],
            [w],
            [int(rev.record_seq)],
            "review",
            score,
            sig,
        )
        if gained:
            # Reasons of the wrong samples say what is left to fix (format vs content).
            reasons: dict[str, int] = {}
            for s in rev.samples:
                if s.score < 1.0:
                    reasons[s.reason] = reasons.get(s.reason, 0) + 1
            top = ", ".join(f"{k or 'wrong'} x{v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])[:3])
            r.recommendations.append(
                Continue(
                    action="continue",
                    experiment_id=xid,
                    worker_id=w,
                    reason=f"its last step gained {sig.effect:+.3f} (p={sig.p:.3g}); {wrong}/{n} review samples still "
                    f"wrong ({top}); train it further on fresh data",
                    significance=sig,
                )
            )
        return score

    # -- Workers against each other -------------------------------------------------------------
    @staticmethod
    def _compare(ctx: ReviewerContext, review: dict[str, tuple[str, float]], r: Report) -> None:
        best: dict[str, tuple[float, str]] = {}
        for xid, (w, s) in review.items():
            if w not in best or s > best[w][0]:
                best[w] = (s, xid)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))
        if len(ranked) < 2:
            if ranked:
                r.missing_comparisons.append(f"{ranked[0][0]} was compared with no other Worker")
            return
        lead_w, (lead_s, lead_x) = ranked[0]
        pool = _difficulty_pool(ctx, r)
        for w, (s, xid) in ranked[1:]:
            if ctx.time_left() < 5:
                r.missing_comparisons.append(f"{lead_x} vs {xid}: not compared, the budget ran out")
                continue
            try:
                cmp = ctx.call_as(
                    Comparison, "eval.compare", {"experiment_a": lead_x, "experiment_b": xid, "split": "review"}
                )
            except ToolError as exc:
                r.missing_comparisons.append(f"{lead_x} vs {xid}: {exc}")
                continue
            only_a, only_b = len(cmp.only_a), len(cmp.only_b)
            # Conditional on item difficulty: hard items are missed by both whatever their skills,
            # so independence alone reads shared misses as redundancy.
            a_out, b_out = r.outcomes.get(lead_x, {}), r.outcomes.get(xid, {})
            sig = stratified_complementarity(difficulty_strata(a_out, b_out, pool(lead_x, xid)))
            expected = only_b - sig.effect  # what independence predicts only B solves
            complementary = sig.p < ALPHA and only_b > 0
            r.add(
                "supported",
                f"{lead_w} leads {w} on review: {lead_x} {lead_s:.3f} vs {xid} {s:.3f}; {only_a} samples only "
                f"{lead_x} solves, {only_b} only {xid} ({expected:.1f} expected if independent, p={sig.p:.3g}), "
                f"{cmp.both_right} both (conditional on item difficulty)",
                "supported",
                "comparison",
                [lead_x, xid],
                [lead_w, w],
                [*r.review_seq.get(lead_x, []), *r.review_seq.get(xid, [])],
                significance=sig,
            )
            if complementary:
                r.recommendations.append(
                    Combine(
                        action="combine",
                        worker_ids=[lead_w, w],
                        experiment_ids=[lead_x, xid],
                        reason=f"{xid} solves {only_b} review samples that {lead_x} misses, {sig.effect:.1f} more than "
                        f"independence predicts at each item's difficulty (p={sig.p:.3g}); mix their recipes",
                        significance=sig,
                    )
                )

    @staticmethod
    def _audit(ctx: ReviewerContext, xids: list[str], r: Report) -> None:
        if not xids:
            return
        try:
            a = ctx.call_as(AuditView, "audit.run", {"experiments": xids})
        except ToolError as exc:
            r.add("uncertainties", f"the integrity audit did not run: {exc}", "uncertain", "audit", xids)
            return
        for xid in a.flagged:
            subs = sorted(
                {f["subcategory"] for f in a.findings if f["experiment_id"] == xid and f["observation"] == "EXECUTED"}
            )
            r.add(
                "violations",
                f"{xid} is flagged by the integrity audit: {', '.join(subs)}",
                "unsupported",
                "audit",
                [xid],
            )
        if not a.flagged:
            r.add(
                "supported",
                f"integrity audit: no executed violation among {', '.join(xids)}",
                "supported",
                "audit",
                xids,
            )


def _difficulty_pool(ctx: ReviewerContext, r: Report) -> Callable[[str, str], list[dict[str, bool]]]:
    """(A, B) -> the `review` outcomes of up to `DIFFICULTY_POOL` other checkpoints, the latest
    scored first: each item's difficulty for the complementarity test. Their records are reused
    (`eval.review` scores a checkpoint once), so reading them costs no evaluation."""
    experiments = ctx.expos.projection().state.experiments
    scored = sorted((rec.seq, x.id) for x in experiments.values() for rec in x.records() if rec.split == "review")
    order = [xid for _, xid in reversed(scored)]

    def outcomes(xid: str) -> dict[str, bool]:
        if xid not in r.outcomes:
            try:
                rev = ctx.call_as(ReviewEval, "eval.review", {"experiment_id": xid})
            except ToolError:
                r.outcomes[xid] = {}
            else:
                r.outcomes[xid] = {s.sample_id: s.score >= 1.0 for s in rev.samples}
        return r.outcomes[xid]

    def pool(a: str, b: str) -> list[dict[str, bool]]:
        others = [outcomes(x) for x in order if x not in (a, b)][:DIFFICULTY_POOL]
        return [o for o in others if o]

    return pool
