"""A candidate's last step as the Reviewer measures it: its `review` score against the checkpoint
its Worker started from (paired on the same items), or, for a Worker that started from the base,
against the run's least trained checkpoints."""

from __future__ import annotations

from ..events import Significance
from ..expos import Comparison, Inspection, ReviewEval, ToolError
from ._protocols import ReviewerContext
from ._review_report import Report
from ._stats import gain_test, paired_gain

__all__ = ["EVAL_SECONDS", "floor_score", "last_step"]

# Time one review evaluation may take, held back before starting one near the deadline.
EVAL_SECONDS = 20.0


def last_step(
    ctx: ReviewerContext, w: str, xid: str, parent: str, score: float, n: int, floor: float | None, r: Report
) -> Significance | None:
    """The gain of `xid` over the checkpoint its Worker started from (the lineage's last step: what
    the Worker's allowance bought), paired on `review` items (that checkpoint scored on `review`
    first if it was not), or against the run's least trained checkpoints (`floor_score`) for a
    Worker that started from the base. A candidate below its immediate parent's `review` score is
    also a regression finding."""
    if parent != "base":
        try:
            p = ctx.call_as(Inspection, "experiment.inspect", {"experiment_id": parent, "sample_rows": 0})
        except ToolError as exc:  # a parent that is no experiment of the run is a finding, not a crash
            r.add(
                "violations",
                f"{xid}: its parent {parent} cannot be inspected: {exc}",
                "unsupported",
                "gain",
                [xid],  # the parent is no experiment of the run (`foreign` weights): named in the text only
                [w],
            )
            return None
        prev = next((float(e["score"]) for e in p.evaluations if e.get("split") == "review"), None)
        if prev is not None and score < prev:
            r.add(
                "regressions",
                f"{xid} review {score:.3f} is below its parent {parent} ({prev:.3f})",
                "supported",
                "regression",
                [xid, parent],
                [w],
                r.review_seq.get(xid, []),
            )
    start = _start(ctx, w, xid)
    if start == "base":
        return gain_test(score, n, floor, n, "base") if floor is not None else None
    try:
        prev_rec = ctx.call_as(ReviewEval, "eval.review", {"experiment_id": start})  # its record when it has one
        cmp = ctx.call_as(Comparison, "eval.compare", {"experiment_a": xid, "experiment_b": start, "split": "review"})
    except ToolError:
        return None
    m = cmp.both_right + len(cmp.only_a) + len(cmp.only_b) + cmp.both_wrong
    r.evidence.append(int(prev_rec.record_seq))
    return paired_gain(m, len(cmp.only_a), len(cmp.only_b), start)


def _start(ctx: ReviewerContext, w: str, xid: str) -> str:
    """The checkpoint `w`'s lineage of `xid` started from: the nearest ancestor another Worker
    trained (a verified checkpoint the Main handed it), or `base`."""
    experiments = ctx.expos.projection().state.experiments
    x = experiments.get(xid)
    seen = {xid}
    while x is not None and x.parent != "base" and x.parent not in seen:
        seen.add(x.parent)
        up = experiments.get(x.parent)
        if up is None or up.owner != w:
            return x.parent if up is not None else "base"
        x = up
    return "base"


def floor_score(ctx: ReviewerContext) -> float | None:
    """The closest measurement of the base model's score: no run scores its base, and its least
    trained checkpoints (the Workers' short measuring trials) are the lowest `dev` scores it holds."""
    scores = [
        s
        for x in ctx.expos.projection().state.experiments.values()
        if x.status == "completed" and (s := x.dev_score()) is not None
    ]
    return min(scores) if scores else None
