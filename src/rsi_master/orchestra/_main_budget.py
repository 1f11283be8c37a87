"""The Main policy's budget: a Worker's allowance, the time kept for the last comparison,
the shortest trial this machine runs, how much Workers overrun their allowances, a
direction's cap before a passing review, and the shortest budget a run can use at all."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import RsiMasterError
from ..tasks import task_hints
from ._directions import DEFAULT_TRAIN, Direction
from ._graph import Job, OrchestraPart, ResearchGraph
from ._job import run_timing
from ._protocols import MainContext
from ._trial_timing import MIN_STEPS, cheapest_batch, min_trial_seconds

if TYPE_CHECKING:
    from ..tasks import Task

__all__ = ["BudgetRule", "check_budget", "min_budget_s", "overrun_factor", "smallest_batch"]

MIN_ALLOWANCE_S = 30.0  # a Worker's allowance is never shorter (process start and a first trial)
# Kept at the end for comparing the last candidates: a cross-Worker review, at least this long
# and this fraction of the budget.
RESERVE_S = 10.0
RESERVE_FRACTION = 0.05
# An allowance holds its shortest trial with this much to spare: the Worker's process starts and
# finalizes inside it, and a Worker left exactly one trial's time skips it as not fitting.
TRIAL_MARGIN = 1.25


def smallest_batch(task: Task) -> int:
    """The cheapest batch any of the task's directions trains at (its declared sizes, else the
    default range's): a short budget is planned at it."""

    sizes = task_hints(task).batch_sizes or tuple(DEFAULT_TRAIN["batch_size"].choices or (8,))
    return int(min(sizes))


def overrun_factor(jobs: Iterable[Job]) -> float:
    """How many times their allowance finished Worker jobs took (the upper median, at least 1):
    a machine slower than the timing model, or trials longer than planned, show here first."""
    ratios = []
    for j in jobs:
        if j.kind != "worker" or j.status != "done" or j.end_ts is None or j.deadline is None:
            continue
        allowed = j.deadline - j.start_ts
        if allowed > 1.0:
            ratios.append((j.end_ts - j.start_ts) / allowed)
    return max(1.0, sorted(ratios)[len(ratios) // 2]) if ratios else 1.0


def min_budget_s(task: Task, timing: dict[str, float] | None = None) -> float:
    """The shortest budget in which the Main can give one Worker time for its shortest trial
    and still keep the time for the last comparison (`BudgetRule`'s rules, before any measurement)."""
    floor = TRIAL_MARGIN * min_trial_seconds(timing or {}, smallest_batch(task))
    return max(floor + RESERVE_S, floor / (1 - RESERVE_FRACTION))


def check_budget(budget_s: float, task: Task, timing: dict[str, float] | None = None) -> None:
    """Refuse, in one line, a budget in which no Worker could train anything (`min_budget_s`)."""

    least = min_budget_s(task, timing)
    if budget_s < least:
        batch = smallest_batch(task)
        trial = min_trial_seconds(timing or {}, batch)
        raise RsiMasterError(
            f"budget {budget_s:g}s is too short to train anything: the shortest experiment ({MIN_STEPS} steps "
            f"at batch {batch}) takes about {trial:.0f}s on the timing model, a Worker needs "
            f"{TRIAL_MARGIN * trial:.0f}s for it and {max(RESERVE_S, RESERVE_FRACTION * least):.0f}s are kept for "
            f"comparing candidates; give at least {least:.0f}s"
        )


@dataclass(frozen=True)
class BudgetRule:
    """The budget rules of `PolicyMain`, one of its parts: how long a Worker gets, when the run is
    late, and a direction's share before a passing review."""

    share: float = 0.4  # most budget one direction gets before a passing cross-Worker review
    late: float = 0.75  # from here on: compare and select, no new Workers
    worker_fraction: float = 0.3  # a Worker's wall-clock allowance, as a fraction of the budget

    def allowance(self, ctx: MainContext, d: Direction | None = None) -> float:
        """A Worker's wall-clock allowance: its fraction of the budget, but at least two of the
        shortest trials this machine has been measured to run (else it could not compare),
        and at most a direction's share, though never below one shortest trial (a short budget
        is spent on small experiments rather than none), direction `d`'s own where given. It
        ends before the time kept for the last comparison at the rate Workers have been
        measured to overrun their allowances."""
        floor = self.trial_floor_s(ctx, d)
        want = max(MIN_ALLOWANCE_S, self.worker_fraction * ctx.budget_s, 2 * self.min_trial_s(ctx))
        left = (ctx.budget_s - ctx.spent_s() - self.reserve_s(ctx)) / self.overrun(ctx)
        return max(0.0, min(max(min(want, self.share * ctx.budget_s), floor), left))

    def can_add(self, ctx: MainContext) -> bool:
        """A new Worker's allowance holds its shortest trial (else it would finalize having started none)."""
        return self.allowance(ctx) >= self.trial_floor_s(ctx)

    def fits(self, ctx: MainContext, d: Direction) -> bool:
        """A Worker of `d` opened now gets time for d's shortest trial. A direction's cheapest
        batch can be above the task's (GRPO's is a multiple of its completions per prompt): its
        Worker, given the task's shortest trial, finalized in 4 s having started none (a 90-s
        run on a task directory)."""
        return self.allowance(ctx, d) >= self.trial_floor_s(ctx, d)

    def pace_note(self, ctx: MainContext) -> str:
        """What a decision's rationale says about the measured overrun (empty when there is none)."""
        f = self.overrun(ctx)
        if f <= 1.0:
            return ""
        return f"; Workers took {f:.2f}x their allowances: new ones are sized to end in time at that rate"

    def trial_floor_s(self, ctx: MainContext, d: Direction | None = None) -> float:
        return TRIAL_MARGIN * self.min_trial_s(ctx, d)

    @staticmethod
    def reserve_s(ctx: MainContext) -> float:
        """Time kept at the end for comparing the last candidates (a cross-Worker review)."""
        return max(RESERVE_S, RESERVE_FRACTION * ctx.budget_s)

    @staticmethod
    def overrun(ctx: MainContext) -> float:
        return overrun_factor(ctx.expos.projection().part(OrchestraPart).jobs)

    @staticmethod
    def min_trial_s(ctx: MainContext, d: Direction | None = None) -> float:
        """The shortest trial, at the task's cheapest batch (or direction `d`'s, where it is
        larger), priced from this run's measurements."""

        batch = smallest_batch(ctx.expos.task)
        return min_trial_seconds(
            run_timing(ctx.expos.reader), max(batch, cheapest_batch(d)) if d is not None else batch
        )

    def capped(self, ctx: MainContext, graph: ResearchGraph, d: Direction, reviewed: bool) -> bool:
        """The direction already took its share of the budget without passing verification
        (`reviewed`: a passing cross-Worker review, or what the policy's verifier counts as one);
        a direction not yet tried never is: a budget whose share is below one trial opens it;
        or a Worker of it opened now would have no time for its shortest trial (`fits`)."""
        if not self.fits(ctx, d):
            return True
        if reviewed:
            return False
        spent = graph.direction_seconds().get(d.key(), 0.0)
        return spent > 0 and spent + self.allowance(ctx, d) > self.share * ctx.budget_s + 1e-9
