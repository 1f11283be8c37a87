"""The read side of a run: what the code that only reads a run takes instead of the session.

A `RunReader` holds the run's contract, store and ledger, its projection and its task: the
summaries, metrics, views, audits and the scheduler's readings of the run take one, so they
cannot record, issue capabilities, evaluate or reach the seal. The session builds it once
(`ExpOS.reader`) and answers its own reads through it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..artifacts import RunStore
    from ..ledger import Event, Ledger
    from ..tasks import Task
    from ._contract import TaskContract
    from ._projection import Projection
    from ._state import State

__all__ = ["FINAL_KINDS", "RunReader", "load_state"]

# The events that end a run: after the first of these by the harness, the door is shut.
FINAL_KINDS = ("orchestra.finish",)


@dataclass(frozen=True, eq=False)
class RunReader:
    """A run as read: its directory, id, contract, store and ledger, with its projection and
    its task (each resolved on first use, by the session that built it)."""

    path: Path
    run_id: str
    contract: TaskContract
    store: RunStore
    ledger: Ledger
    # The session's projection, advanced to the ledger's last event on each call.
    projected: Callable[[], Projection]
    # The run's task (public items), resolved once from the contract.
    task_of: Callable[[], Task]

    @property
    def backend_name(self) -> str:
        """The experiment backend the contract names: `real`, or `sim` for a simulated world."""
        return "real" if self.contract.simulation is None else self.contract.simulation.backend

    @property
    def task(self) -> Task:
        """The run's task (public items)."""
        return self.task_of()

    def projection(self) -> Projection:
        """The run's projection, advanced to the ledger's last event (written by any process)."""
        return self.projected()

    def events(self, *kinds: str, actor_id: str | None = None, role: str | None = None) -> list[Event]:
        return list(self.ledger.events(kinds=kinds, actor_id=actor_id, role=role))

    def own_events(self, *kinds: str) -> list[Event]:
        """The harness's own records of these kinds: read by author, never "any event of this kind"."""
        return self.events(*kinds, role="harness")

    def final_seq(self) -> int | None:
        """The seq of the run's final record (the harness's `orchestra.finish`), or None while it runs."""
        first = next(self.ledger.events(kinds=FINAL_KINDS, role="harness", limit=1), None)
        return None if first is None else first.seq


def load_state(reader: RunReader) -> State:
    """The run's state, brought up to the ledger's last event (the events since the last
    look are folded; nothing is replayed). Read it, never change it: every reader shares it."""
    return reader.projection().state
