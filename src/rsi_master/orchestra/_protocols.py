"""Agent protocols and their registries.

A Worker or Reviewer is handed a `NodeContext` (an ExpOS session with its own caller
identity, its typed brief, and the wall-clock deadline) and acts only through
`ctx.call(tool, args)` (or `ctx.call_as`, which says the result's type); the Main agent is handed the graph at each orchestration event
and acts through the Main tools. Programmatic policies implement these today; an
LLM-backed agent implements the same methods (its tool calls go through the same
`ctx.call`), so the graph, ExpOS and the scheduler do not change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from .. import _clock
from ..errors import RsiMasterError, StopRequested
from ..events import OrchestraStart, payload_of
from ..expos import ExpOS, Unguarded
from ._briefs import ReviewerBrief, WorkerBrief
from ._registry import GUARD_POLICIES, MAINS, REVIEWERS, WORKERS, main_agent, resolve, reviewer_agent, worker_agent

if TYPE_CHECKING:
    from ..expos import Caller, ExpOS
    from ._graph import OrchestraEvent, ResearchGraph
    from ._memory import Trial

__all__ = [
    "MAINS",
    "REVIEWERS",
    "WORKERS",
    "BudgetEnd",
    "MainAgent",
    "MainContext",
    "NodeContext",
    "ReviewerAgent",
    "ReviewerContext",
    "WorkerAgent",
    "WorkerContext",
    "environment",
    "guard_policy",
    "main_agent",
    "resolve",
    "reviewer_agent",
    "worker_agent",
]


class BudgetEnd(StopRequested):
    """Raised inside a node when the scheduler asks it to stop (SIGTERM at the budget's end, or
    the operator's guidance): a Worker finalizes with what it has instead of being killed without
    a word."""


B = TypeVar("B", WorkerBrief, ReviewerBrief)
R = TypeVar("R", bound=BaseModel)


@dataclass
class NodeContext(Generic[B]):
    """What a Worker or Reviewer node runs with. `brief` is the node's spec from the graph
    (a `WorkerBrief`: its direction; a `ReviewerBrief`: question and scope plus the conclusions
    to check)."""

    expos: ExpOS
    caller: Caller
    brief: B
    deadline: float  # the run's clock (`_clock.now()`: real or simulated) by which the node must have finished
    seed: int = 0
    memory: list[Trial] = field(default_factory=list)  # a Worker's own earlier trials, from the ledger (resume)

    def call(self, tool: str, args: dict[str, Any] | None = None) -> Any:
        """One tool call as this node; the result is the tool's pydantic model (`call_as` where
        the caller names its type)."""
        return self.expos.call(self.caller, tool, args or {})

    def call_as(self, result: type[R], tool: str, args: dict[str, Any] | None = None) -> R:
        """`call`, its result checked to be a `result` (a tool returning another model is a fault
        of the harness, raised)."""
        return _checked(self.call(tool, args), result, tool)

    def time_left(self) -> float:
        return self.deadline - _clock.now()


def _checked(out: Any, result: type[R], tool: str) -> R:
    if not isinstance(out, result):
        raise TypeError(f"{tool} returned {type(out).__name__}, not {result.__name__}")
    return out


WorkerContext = NodeContext[WorkerBrief]
ReviewerContext = NodeContext[ReviewerBrief]


@dataclass
class MainContext:
    expos: ExpOS
    caller: Caller
    budget_s: float
    spent_s: Callable[[], float]
    slots: int
    seed: int = 0
    worker: str = "tpe"  # the run's Worker agent: the Main names it in the directions it adds

    def call(self, tool: str, args: dict[str, Any] | None = None) -> Any:
        return self.expos.call(self.caller, tool, args or {})

    def call_as(self, result: type[R], tool: str, args: dict[str, Any] | None = None) -> R:
        """`call`, its result checked to be a `result` (as `NodeContext.call_as`)."""
        return _checked(self.call(tool, args), result, tool)

    def fraction_spent(self) -> float:
        return min(1.0, self.spent_s() / self.budget_s)


@runtime_checkable
class WorkerAgent(Protocol):
    def run(self, ctx: WorkerContext) -> None:
        """Explore the direction in `ctx.brief` through experiments, then call worker.finalize."""


@runtime_checkable
class ReviewerAgent(Protocol):
    def run(self, ctx: ReviewerContext) -> None:
        """Check the scope's conclusions against ExpOS evidence, then call review.submit."""


@runtime_checkable
class MainAgent(Protocol):
    def start(self, ctx: MainContext, graph: ResearchGraph) -> None:
        """Seed the research graph (first Workers), recording the decision."""

    def on_event(self, ctx: MainContext, graph: ResearchGraph, event: OrchestraEvent) -> None:
        """Answer one orchestration event (a finalize or a review report) with a recorded decision."""

    def on_idle(self, ctx: MainContext, graph: ResearchGraph, free_slots: int) -> bool:
        """Slots are free and nothing is pending: add work (True) or not (False)."""

    def finish(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None:
        """The budget is spent or the work is done: record the stop decision and nominations."""


def guard_policy(name: str) -> Any:
    """The guard policy a run's `orchestra.start` names (a name registered with
    `guard_policy_class`, e.g. the bench's `workspace`, or a `package.module:Class` subclass of
    `expos.Unguarded`), made by the harness's code."""

    try:
        cls = resolve(GUARD_POLICIES, name)
    except KeyError:
        known = ", ".join(sorted(GUARD_POLICIES)) or "none"
        raise RsiMasterError(
            f"unknown environment {name!r}: not a registered guard policy ({known}) or package.module:Class"
        ) from None
    except (ImportError, AttributeError, ValueError) as exc:
        raise RsiMasterError(f"unknown environment {name!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Unguarded)):
        raise RsiMasterError(f"environment {name!r} is not a guard policy (a subclass of expos.Unguarded)")
    return cls()


def environment(expos: ExpOS) -> ExpOS:
    """The door the run's agents act through: the session with the guard policy the run was
    created with. Strict unless the run's contract is unguarded; then the policy class its
    `orchestra.start` names (`environment`), or plain `Unguarded`. Scheduler, slot processes
    and harness all open the run through this, so one run has one door and one policy."""

    if expos.contract.guards == "strict":
        return expos
    starts = expos.own_events("orchestra.start")
    name = payload_of(starts[0], OrchestraStart).environment if starts else None
    policy = guard_policy(name) if name else Unguarded()
    session = ExpOS(expos.run, expos.contract, guards=policy, projections=expos.projections)
    policy.prepare(session)
    return session
