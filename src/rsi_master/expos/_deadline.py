"""How a node's deadline reaches the tools it calls: the scheduler records every node it starts
(`orchestra.job.start`, the harness's own record) with the time by which it must finish, and a
tool whose work has no fixed size (sampling) bounds itself by the caller's latest one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from .. import _clock
from ..events import OrchestraJobStart, typed

if TYPE_CHECKING:
    from ..ledger import Event
    from ._caller import Caller

__all__ = ["HarnessRecords", "caller_deadline", "seconds_left"]


class HarnessRecords(Protocol):
    """Where the harness's own records are read: a session, or a tool's context."""

    def own_events(self, *kinds: str) -> list[Event]: ...


def caller_deadline(run: HarnessRecords, caller: Caller) -> float | None:
    """The run-clock time by which the caller's latest started job must end; None for a caller
    the scheduler did not start (an external agent on a run without one, the operator)."""
    latest = None
    for e in run.own_events("orchestra.job.start"):
        p = typed(e, OrchestraJobStart).payload
        if p.node == caller.id and p.kind == caller.role:
            latest = p.deadline
    return latest


def seconds_left(run: HarnessRecords, caller: Caller) -> float | None:
    """Seconds until the caller's deadline (negative once passed), or None without one."""
    deadline = caller_deadline(run, caller)
    return None if deadline is None else deadline - _clock.now()
