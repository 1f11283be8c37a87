"""The Main's late budget: which verified lineages a slot may still continue once the budget is
mostly spent (`BudgetRule.late`), where a continuation's only use is a better checkpoint for the
harness's selection on `review`.

A lineage is passed over when it cannot matter there:

- far below the leader: its `review` score more than `FAR_SE` standard errors (binomial, at the
  split's item count) below the best verified one, so that taking the leader's lineage is no
  reason to train it (a slot on such a lineage bought nothing the selection could use);
- no measured gain: a review measured its last step (the candidate against the checkpoint its
  Worker started from) and it gained nothing (an effect of zero or less). A gain inside the noise
  is not enough to stop: a lineage's steps are each small against a 50-item split's noise, and
  passing over the leader's for want of significance cost a simulated campaign 0.12 of its final;
  the Reviewer recommends `continue` only beyond the noise, the Main's own continuation does not
  wait for it;
- plateaued: its direction's learning curve forecasts less than one item of a `dev` split from
  another allowance (`Evidence.checkpoint_outlook`), even one standard deviation of the forecast
  up, on a curve of at least `PLATEAU_POINTS` measurements. The bar is a gain, not a gain the
  split could tell from noise: late, a slot passed over stays idle (no direction opens), and a
  forecast gain of a fraction of a standard error on the leader's lineage is still a better
  checkpoint for the selection on `review` (the standard-error bar left the leader's lineage,
  forecast +0.02 on a 50-item split, idle for the last tenth of a simulated campaign).
"""

from __future__ import annotations

from collections.abc import Callable

from . import _reports as reports
from ._evidence import Evidence
from ._graph import ResearchGraph, WorkerNode
from ._main_parts import Candidate
from ._protocols import MainContext
from ._stats import standard_error

__all__ = ["FAR_SE", "PLATEAU_POINTS", "late_worth", "plateaued"]

FAR_SE = 2.0
PLATEAU_POINTS = 3  # a flat stretch needs at least three points to be told from one noisy step


def late_worth(
    ctx: MainContext, graph: ResearchGraph, ranked: list[Candidate], seconds: float
) -> Callable[[str, WorkerNode], str | None]:
    """(checkpoint, its Worker) -> None when continuing it for `seconds` may still matter, else why
    not, for the verified candidates `ranked`."""
    if not ranked:
        return lambda xid, w: None
    n_review = len(ctx.expos.contract.evaluator.sample_ids.get("review") or []) or 1
    lead = max(c.score for c in ranked)
    bar = lead - FAR_SE * standard_error(lead, n_review)
    score = {c.experiment_id: c.score for c in ranked}
    tested = reports.gains(graph)
    evidence = Evidence(ctx, graph)

    def why_not(xid: str, w: WorkerNode) -> str | None:
        if score.get(xid, lead) < bar:
            return f"{xid} review {score[xid]:.3f} is more than {FAR_SE:g} se below the leader's {lead:.3f}"
        g = tested.get(xid)
        if g is not None and g.effect <= 0:
            return f"{xid}'s last step measured no gain over {g.reference} ({g.effect:+.3f}, p={g.p:.2g})"
        now = evidence.checkpoint_outlook(xid, w.direction, 0.0)
        more = evidence.checkpoint_outlook(xid, w.direction, seconds)
        # Optimistic (one standard deviation of the forecast up), and only on a curve of
        # `PLATEAU_POINTS` measurements: one measured too little to say is not called flat.
        if plateaued(now.mean, more.mean, more.std, more.n, evidence.n_items):
            return (
                f"{xid}'s curve forecasts {more.mean - now.mean:+.3f} (+{more.std:.3f}) from {seconds:.0f} s more: "
                "less than one item"
            )
        return None

    return why_not


def plateaued(now: float, mean: float, std: float, points: int, n_items: int) -> bool:
    """A forecast of `mean` (+-`std`) from another allowance, against `now`, on a curve of `points`
    measurements of `n_items`-item scores: flat when even one standard deviation up it gains less
    than one item, on a curve long enough to tell a flat stretch from one noisy step."""
    return points >= PLATEAU_POINTS and mean + std - now < 1.0 / max(1, n_items)
