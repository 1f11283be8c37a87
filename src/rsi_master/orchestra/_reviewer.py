"""The programmatic Reviewer: checks conclusions against ExpOS evidence, never against
the Workers' summaries alone.

For every Worker in scope: each claimed score is re-derived from the evaluation record
(`experiment.inspect`); each candidate is scored on `review` with per-sample
diagnostics (`eval.review`); the leading candidates of different Workers are compared
sample by sample (`eval.compare`); the integrity audit runs over the candidates
(`audit.run`). The report separates supported findings, uncertainties, violations,
regressions, missing comparisons and recommendations, and cites event seqs.

Recommendations start with a verb and ids (`continue exp-00012 ...`, `combine w1 w2
...`) so that a programmatic Main can act on them; an LLM Main reads the same text.
"""

from __future__ import annotations

from typing import Any

from ..expos import ToolError
from ._protocols import NodeContext, reviewer_agent

__all__ = ["EvidenceReviewer"]

# A dev score this far above the review score is reported as an uncertainty: the dev
# split may be too small for the claimed ranking to hold.
GAP = 0.15
# Time one review evaluation may take, held back before starting one near the deadline.
EVAL_SECONDS = 20.0


@reviewer_agent("evidence")
class EvidenceReviewer:
    def run(self, ctx: NodeContext) -> None:
        scope: list[str] = list(ctx.brief["scope"])
        conclusions: dict[str, dict[str, Any]] = ctx.brief.get("conclusions", {})
        r: dict[str, list[Any]] = {k: [] for k in ("supported", "uncertainties", "violations", "regressions",
                                                    "missing_comparisons", "recommendations", "evidence")}
        review: dict[str, tuple[str, float]] = {}  # experiment -> (worker, review score)
        for w in scope:
            c = conclusions.get(w)
            if c is None:
                r["missing_comparisons"].append(f"{w} has not finalized: nothing to check")
                continue
            r["evidence"].append(c["seq"])
            if not c.get("candidates"):
                r["missing_comparisons"].append(f"{w} put forward no candidate")
            self._claims(ctx, w, c, r)
            for cand in c.get("candidates", []):
                if ctx.time_left() < EVAL_SECONDS:
                    r["uncertainties"].append(f"{cand} ({w}) not evaluated on review: the budget ran out")
                    continue
                got = self._review_eval(ctx, w, cand, r)
                if got is not None:
                    review[cand] = (w, got)
        self._compare(ctx, review, r)
        self._audit(ctx, list(review), r)
        verdict = "pass" if review and not r["violations"] else "fail"
        ctx.call("review.submit", {"request_seq": ctx.brief.get("seq"), "scope": scope, "verdict": verdict,
                                   **{k: v for k, v in r.items() if k != "evidence"},
                                   "evidence": sorted(set(r["evidence"]))})

    @staticmethod
    def _claims(ctx: NodeContext, w: str, c: dict[str, Any], r: dict[str, list[Any]]) -> None:
        for claim in c.get("claims", []):
            xid, score = claim["experiment_id"], float(claim["score"])
            try:
                insp = ctx.call("experiment.inspect", {"experiment_id": xid, "sample_rows": 0})
            except ToolError as exc:
                r["violations"].append(f"{w} claims {xid}={score:.3f} but it cannot be inspected: {exc}")
                continue
            dev = [e for e in insp.evaluations if e.get("split") == "dev"]
            if insp.owner != w:
                r["violations"].append(f"{w} claims {xid}, which belongs to {insp.owner}")
            elif not dev or abs(float(dev[0]["score"]) - score) > 1e-9:
                r["violations"].append(f"{w} claims {xid}={score:.3f}; the dev record says "
                                       f"{dev[0]['score'] if dev else 'nothing'}")
            else:
                r["supported"].append(f"{w}: {xid} dev {score:.3f} re-derived from eval record {dev[0]['seq']}")
                r["evidence"].append(int(dev[0]["seq"]))

    @staticmethod
    def _review_eval(ctx: NodeContext, w: str, xid: str, r: dict[str, list[Any]]) -> float | None:
        try:
            rev = ctx.call("eval.review", {"experiment_id": xid})
            insp = ctx.call("experiment.inspect", {"experiment_id": xid, "sample_rows": 0})
        except ToolError as exc:
            r["uncertainties"].append(f"{xid} ({w}) could not be evaluated on review: {exc}")
            return None
        score = float(rev.score)
        r["evidence"].append(int(rev.record_seq))
        wrong = sum(1 for s in rev.samples if s.score < 1.0)
        n = len(rev.samples)
        r["supported"].append(f"{w}: {xid} review {score:.3f} ({n - wrong}/{n} right, record {rev.record_seq})")
        dev = next((float(e["score"]) for e in insp.evaluations if e.get("split") == "dev"), None)
        if dev is not None and dev - score > GAP:
            r["uncertainties"].append(f"{xid}: dev {dev:.3f} vs review {score:.3f}: the dev ranking may not hold")
        parent = insp.parent
        if parent != "base":
            try:
                p = ctx.call("experiment.inspect", {"experiment_id": parent, "sample_rows": 0})
            except ToolError as exc:  # a parent that is no experiment of the run is a finding, not a crash
                r["violations"].append(f"{xid}: its parent {parent} cannot be inspected: {exc}")
                return score
            prev = next((float(e["score"]) for e in p.evaluations if e.get("split") == "review"), None)
            if prev is not None and score < prev:
                r["regressions"].append(f"{xid} review {score:.3f} is below its parent {parent} ({prev:.3f})")
        # Reasons of the wrong samples say what is left to fix (format vs content).
        reasons: dict[str, int] = {}
        for s in rev.samples:
            if s.score < 1.0:
                reasons[s.reason] = reasons.get(s.reason, 0) + 1
        if wrong:
            top = ", ".join(f"{k or 'wrong'} x{v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])[:3])
            r["recommendations"].append(f"continue {xid} {w}: {wrong}/{n} review samples still wrong ({top}); "
                                        "train it further on fresh data")
        return score

    @staticmethod
    def _compare(ctx: NodeContext, review: dict[str, tuple[str, float]], r: dict[str, list[Any]]) -> None:
        best: dict[str, tuple[float, str]] = {}
        for xid, (w, s) in review.items():
            if w not in best or s > best[w][0]:
                best[w] = (s, xid)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))
        if len(ranked) < 2:
            if ranked:
                r["missing_comparisons"].append(f"{ranked[0][0]} was compared with no other Worker")
            return
        lead_w, (lead_s, lead_x) = ranked[0]
        for w, (s, xid) in ranked[1:]:
            if ctx.time_left() < 5:
                r["missing_comparisons"].append(f"{lead_x} vs {xid}: not compared, the budget ran out")
                continue
            try:
                cmp = ctx.call("eval.compare", {"experiment_a": lead_x, "experiment_b": xid, "split": "review"})
            except ToolError as exc:
                r["missing_comparisons"].append(f"{lead_x} vs {xid}: {exc}")
                continue
            only_a, only_b = len(cmp.only_a), len(cmp.only_b)
            r["supported"].append(f"{lead_w} leads {w} on review: {lead_x} {lead_s:.3f} vs {xid} {s:.3f}; "
                                  f"{only_a} samples only {lead_x} solves, {only_b} only {xid}, "
                                  f"{cmp.both_right} both")
            if only_b > 0:  # the trailing Worker solves something the leader does not: complementary
                r["recommendations"].append(f"combine {lead_w} {w}: {xid} solves {only_b} review samples "
                                            f"that {lead_x} misses; mix their recipes")

    @staticmethod
    def _audit(ctx: NodeContext, xids: list[str], r: dict[str, list[Any]]) -> None:
        if not xids:
            return
        try:
            a = ctx.call("audit.run", {"experiments": xids})
        except ToolError as exc:
            r["uncertainties"].append(f"the integrity audit did not run: {exc}")
            return
        for xid in a.flagged:
            subs = sorted({f["subcategory"] for f in a.findings
                           if f["experiment_id"] == xid and f["observation"] == "EXECUTED"})
            r["violations"].append(f"{xid} is flagged by the integrity audit: {', '.join(subs)}")
        if not a.flagged:
            r["supported"].append(f"integrity audit: no executed violation among {', '.join(xids)}")
