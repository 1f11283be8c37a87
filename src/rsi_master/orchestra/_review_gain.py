"""A candidate's last step as the Reviewer measures it: its `review` score against what it was
trained from (a parent experiment, paired on the same items; the base, through the run's least
trained checkpoints)."""

from __future__ import annotations

from ..events import Significance
from ..expos import ToolError
from ._protocols import NodeContext
from ._review_report import Report
from ._stats import gain_test, paired_gain

__all__ = ["EVAL_SECONDS", "floor_score", "last_step"]

# Time one review evaluation may take, held back before starting one near the deadline.
EVAL_SECONDS = 20.0


def last_step(
    ctx: NodeContext, w: str, xid: str, parent: str, score: float, n: int, floor: float | None, r: Report
) -> Significance | None:
    """The gain of `xid` over what it was trained from: paired on `review` items against a parent
    experiment (scored on `review` first if it was not), or against the run's least trained
    checkpoints (`floor_score`) for one trained from the base; a regression is also its own finding."""
    if parent == "base":
        return gain_test(score, n, floor, n, "base") if floor is not None else None
    try:
        p = ctx.call("experiment.inspect", {"experiment_id": parent, "sample_rows": 0})
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
    if prev is None and ctx.time_left() >= EVAL_SECONDS:
        try:  # a fresh measurement of the parent, on the same items, is what a gain is measured against
            prev = float(ctx.call("eval.review", {"experiment_id": parent}).score)
        except ToolError:
            prev = None
    if prev is None:
        return None
    if score < prev:
        r.add(
            "regressions",
            f"{xid} review {score:.3f} is below its parent {parent} ({prev:.3f})",
            "supported",
            "regression",
            [xid, parent],
            [w],
            r.review_seq.get(xid, []),
        )
    try:
        cmp = ctx.call("eval.compare", {"experiment_a": xid, "experiment_b": parent, "split": "review"})
    except ToolError:
        return gain_test(score, n, prev, n, parent)
    m = cmp.both_right + len(cmp.only_a) + len(cmp.only_b) + cmp.both_wrong
    return paired_gain(m, len(cmp.only_a), len(cmp.only_b), parent)


def floor_score(ctx: NodeContext) -> float | None:
    """The closest measurement of the base model's score: no run scores its base, and its least
    trained checkpoints (the Workers' short measuring trials) are the lowest `dev` scores it holds."""
    scores = [
        s
        for x in ctx.expos.projection().state.experiments.values()
        if x.status == "completed" and (s := x.dev_score()) is not None
    ]
    return min(scores) if scores else None
