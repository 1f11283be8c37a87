"""The Main policy's budget: a Worker's allowance, the time kept for the last comparison,
the shortest trial this machine runs, and a direction's cap before a passing review."""

from __future__ import annotations

from ._directions import Direction
from ._graph import ResearchGraph
from ._protocols import MainContext

__all__ = ["Budget"]

MIN_ALLOWANCE_S = 30.0  # a Worker's allowance is never shorter (process start and a first trial)
# Kept at the end for comparing the last candidates: a cross-Worker review, at least this long
# and this fraction of the budget.
RESERVE_S = 10.0
RESERVE_FRACTION = 0.05


class Budget:
    """The budget rules of `PolicyMain` (a base class, so that a Main built on the policy, such as
    the bench's `NoReviewMain`, overrides one rule and keeps the rest)."""

    def __init__(self, share: float = 0.4, late: float = 0.75, worker_fraction: float = 0.3) -> None:
        self.share = share  # most budget one direction gets before a passing cross-Worker review
        self.late = late  # from here on: compare and select, no new Workers
        self.worker_fraction = worker_fraction  # a Worker's wall-clock allowance, as a fraction of the budget

    def _allowance(self, ctx: MainContext) -> float:
        """A Worker's wall-clock allowance: its fraction of the budget, but at least two of the
        shortest trials this machine has been measured to run (else it could not compare),
        and at most a direction's share."""
        want = max(MIN_ALLOWANCE_S, self.worker_fraction * ctx.budget_s, 2 * self._min_trial_s(ctx))
        # Never more than a direction's share, nor past the time kept for the last comparison.
        left = ctx.budget_s - ctx.spent_s() - self._reserve_s(ctx)
        return max(0.0, min(want, self.share * ctx.budget_s, left))

    @staticmethod
    def _reserve_s(ctx: MainContext) -> float:
        """Time kept at the end for comparing the last candidates (a cross-Worker review)."""
        return max(RESERVE_S, RESERVE_FRACTION * ctx.budget_s)

    @staticmethod
    def _min_trial_s(ctx: MainContext) -> float:
        from ._job import run_timing
        from ._worker import min_trial_seconds

        return min_trial_seconds(run_timing(ctx.expos))

    def _capped(self, ctx: MainContext, graph: ResearchGraph, d: Direction) -> bool:
        """The direction already took its share of the budget without a passing cross-Worker review."""
        if d.key() in graph.verified_keys():
            return False
        spent = graph.direction_seconds().get(d.key(), 0.0)
        return spent + self._allowance(ctx) > self.share * ctx.budget_s + 1e-9
