"""The programmatic Reviewer: checks conclusions against ExpOS evidence, never against
the Workers' summaries alone.

For every Worker in scope: each claimed score is re-derived from the evaluation record
(`experiment.inspect`); each candidate is scored on `review` with per-sample
diagnostics (`eval.review`); the leading candidates of different Workers are compared
sample by sample (`eval.compare`); the integrity audit runs over the candidates
(`audit.run`). The report separates supported findings, uncertainties, violations,
regressions, missing comparisons and recommendations, and cites event seqs.

Findings and recommendations are typed (`Finding`, `Continue`, `Combine`: ids, scores and a
reason), so that a programmatic Main acts on their fields; the prose lists beside them are
for people and LLM agents.
"""

from __future__ import annotations

from typing import Any

from ..events import Combine, Continue, Finding
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
        r: dict[str, list[Any]] = {
            k: []
            for k in (
                "supported",
                "uncertainties",
                "violations",
                "regressions",
                "missing_comparisons",
                "findings",
                "recommendations",
                "evidence",
            )
        }
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
                    _finding(
                        r,
                        "uncertainties",
                        f"{cand} ({w}) not evaluated on review: the budget ran out",
                        "uncertain",
                        [cand],
                        [w],
                    )
                    continue
                got = self._review_eval(ctx, w, cand, r)
                if got is not None:
                    review[cand] = (w, got)
        self._compare(ctx, review, r)
        self._audit(ctx, list(review), r)
        verdict = "pass" if review and not r["violations"] else "fail"
        typed = {
            "findings": [f.model_dump(mode="json") for f in r["findings"]],
            "recommendations": [x.model_dump(mode="json") for x in r["recommendations"]],
        }
        ctx.call(
            "review.submit",
            {
                "request_seq": ctx.brief.get("seq"),
                "scope": scope,
                "verdict": verdict,
                **{k: v for k, v in r.items() if k not in ("evidence", *typed)},
                **typed,
                "evidence": sorted(set(r["evidence"])),
            },
        )

    @staticmethod
    def _claims(ctx: NodeContext, w: str, c: dict[str, Any], r: dict[str, list[Any]]) -> None:
        for claim in c.get("claims", []):
            xid, score = claim["experiment_id"], float(claim["score"])
            try:
                insp = ctx.call("experiment.inspect", {"experiment_id": xid, "sample_rows": 0})
            except ToolError as exc:
                _finding(
                    r,
                    "violations",
                    f"{w} claims {xid}={score:.3f} but it cannot be inspected: {exc}",
                    "unsupported",
                    [xid],
                    [w],
                )
                continue
            dev = [e for e in insp.evaluations if e.get("split") == "dev"]
            if insp.owner != w:
                _finding(r, "violations", f"{w} claims {xid}, which belongs to {insp.owner}", "unsupported", [xid], [w])
            elif not dev or abs(float(dev[0]["score"]) - score) > 1e-9:
                _finding(
                    r,
                    "violations",
                    f"{w} claims {xid}={score:.3f}; the dev record says {dev[0]['score'] if dev else 'nothing'}",
                    "unsupported",
                    [xid],
                    [w],
                    [int(dev[0]["seq"])] if dev else [],
                )
            else:
                _finding(
                    r,
                    "supported",
                    f"{w}: {xid} dev {score:.3f} re-derived from eval record {dev[0]['seq']}",
                    "supported",
                    [xid],
                    [w],
                    [int(dev[0]["seq"])],
                    "dev",
                    score,
                )
                r["evidence"].append(int(dev[0]["seq"]))

    @staticmethod
    def _review_eval(ctx: NodeContext, w: str, xid: str, r: dict[str, list[Any]]) -> float | None:
        try:
            rev = ctx.call("eval.review", {"experiment_id": xid})
            insp = ctx.call("experiment.inspect", {"experiment_id": xid, "sample_rows": 0})
        except ToolError as exc:
            _finding(
                r, "uncertainties", f"{xid} ({w}) could not be evaluated on review: {exc}", "uncertain", [xid], [w]
            )
            return None
        score = float(rev.score)
        r["evidence"].append(int(rev.record_seq))
        wrong = sum(1 for s in rev.samples if s.score < 1.0)
        n = len(rev.samples)
        _finding(
            r,
            "supported",
            f"{w}: {xid} review {score:.3f} ({n - wrong}/{n} right, record {rev.record_seq})",
            "supported",
            [xid],
            [w],
            [int(rev.record_seq)],
            "review",
            score,
        )
        dev = next((float(e["score"]) for e in insp.evaluations if e.get("split") == "dev"), None)
        if dev is not None and dev - score > GAP:
            _finding(
                r,
                "uncertainties",
                f"{xid}: dev {dev:.3f} vs review {score:.3f}: the dev ranking may not hold",
                "uncertain",
                [xid],
                [w],
                [int(rev.record_seq)],
            )
        parent = insp.parent
        if parent != "base":
            try:
                p = ctx.call("experiment.inspect", {"experiment_id": parent, "sample_rows": 0})
            except ToolError as exc:  # a parent that is no experiment of the run is a finding, not a crash
                _finding(
                    r,
                    "violations",
                    f"{xid}: its parent {parent} cannot be inspected: {exc}",
                    "unsupported",
                    [xid],  # the parent is no experiment of the run (`foreign` weights): named in the text only
                    [w],
                )
                return score
            prev = next((float(e["score"]) for e in p.evaluations if e.get("split") == "review"), None)
            if prev is not None and score < prev:
                _finding(
                    r,
                    "regressions",
                    f"{xid} review {score:.3f} is below its parent {parent} ({prev:.3f})",
                    "supported",
                    [xid, parent],
                    [w],
                    [int(rev.record_seq)],
                )
        # Reasons of the wrong samples say what is left to fix (format vs content).
        reasons: dict[str, int] = {}
        for s in rev.samples:
            if s.score < 1.0:
                reasons[s.reason] = reasons.get(s.reason, 0) + 1
        if wrong:
            top = ", ".join(f"{k or 'wrong'} x{v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])[:3])
            r["recommendations"].append(
                Continue(
                    action="continue",
                    experiment_id=xid,
                    worker_id=w,
                    reason=f"{wrong}/{n} review samples still wrong ({top}); train it further on fresh data",
                )
            )
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
            _finding(
                r,
                "supported",
                f"{lead_w} leads {w} on review: {lead_x} {lead_s:.3f} vs {xid} {s:.3f}; "
                f"{only_a} samples only {lead_x} solves, {only_b} only {xid}, {cmp.both_right} both",
                "supported",
                [lead_x, xid],
                [lead_w, w],
            )
            if only_b > 0:  # the trailing Worker solves something the leader does not: complementary
                r["recommendations"].append(
                    Combine(
                        action="combine",
                        worker_ids=[lead_w, w],
                        experiment_ids=[lead_x, xid],
                        reason=f"{xid} solves {only_b} review samples that {lead_x} misses; mix their recipes",
                    )
                )

    @staticmethod
    def _audit(ctx: NodeContext, xids: list[str], r: dict[str, list[Any]]) -> None:
        if not xids:
            return
        try:
            a = ctx.call("audit.run", {"experiments": xids})
        except ToolError as exc:
            _finding(r, "uncertainties", f"the integrity audit did not run: {exc}", "uncertain", xids)
            return
        for xid in a.flagged:
            subs = sorted(
                {f["subcategory"] for f in a.findings if f["experiment_id"] == xid and f["observation"] == "EXECUTED"}
            )
            _finding(
                r, "violations", f"{xid} is flagged by the integrity audit: {', '.join(subs)}", "unsupported", [xid]
            )
        if not a.flagged:
            _finding(
                r, "supported", f"integrity audit: no executed violation among {', '.join(xids)}", "supported", xids
            )


def _finding(
    r: dict[str, list[Any]],
    prose: str,
    claim: str,
    status: str,
    experiments: list[str],
    workers: list[str] | None = None,
    evidence: list[int] | None = None,
    split: str | None = None,
    score: float | None = None,
) -> None:
    """One checked statement, in the report's prose list `prose` (for people) and as a `Finding`."""
    r[prose].append(claim)
    r["findings"].append(
        Finding.model_validate(
            {
                "claim": claim,
                "status": status,
                "experiment_ids": experiments,
                "worker_ids": workers or [],
                "evidence": evidence or [],
                "split": split,
                "score": score,
            }
        )
    )
