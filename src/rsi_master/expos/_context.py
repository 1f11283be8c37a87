"""What a tool implementation may use: a small typed context the door builds for each call.

A tool takes `(ctx: ToolContext, caller, input)`, never the session: it reads the run (contract,
store, ledger, projection, task), records through the one recorder, asks the guard policy, and
uses a few capabilities the session lends without handing itself over. Nothing in the context
reaches the session's lifecycle, its identity (issuing and checking capabilities), the door, the
seal key or the key directory.

Four capabilities stay the session's, each for a reason:
- `evaluate`: the sealed evaluation needs the seal key and the sealed evaluator's copy, which a
  tool must never hold; the tool gets the scoring and its record, not the key.
- `gate`: the contamination checks and the generators need the protected items; the tool gets
  verdicts and clean rows from the run's gate (`_gate`), which draws them in an evaluator process
  wherever agents' tools run, never the items.
- `protected_task`: the items themselves, for a simulated world's training (its world is its own
  evaluator); a node's process of a real run is refused them.
- `audit`: the integrity audit checks the seal itself (`seal_problems`) and reads the whole run.
`record` is the session's method so that every record of a call is written by the same code
as the door's and the harness's own (the ledger's bytes do not depend on who records).

The context narrows what tool code is written against; it is no security boundary. Tools are
the harness's code (a bound method still knows its `__self__`), and agents reach them only
through the door, across a process boundary.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import ToolRefused
from ._ports import Evaluator, ExperimentBackend, Recorder, Waiver

if TYPE_CHECKING:
    from ..artifacts import RunStore
    from ..ledger import Event, Ledger
    from ..tasks import GeneratorFamily, Task
    from ._audit import AuditReport
    from ._contract import TaskContract
    from ._gate import ProtectedGate
    from ._state import State
    from ._taxonomy import Subcategory

__all__ = ["Evaluator", "Recorder", "ToolContext", "drop_scratch"]


@dataclass(frozen=True)
class ToolContext:
    """One call's view of the run. Built by `ExpOS.tool_context` (the door, for each call)."""

    contract: TaskContract
    store: RunStore
    ledger: Ledger
    guards: Waiver
    backend: ExperimentBackend
    record: Recorder
    evaluate: Evaluator
    protected_task: Callable[[], Task]
    # The run's gate: what the tools ask of the protected items (verdicts, clean generated rows),
    # in this process for the harness and simulated runs, else in an evaluator process (`_gate`).
    gate_of: Callable[[], ProtectedGate]
    audit: Callable[[list[str] | None], AuditReport]
    # The run's task, resolved once by the session (lazily: a call that needs none resolves none).
    task_of: Callable[[], Task]
    # The state projected from the ledger, advanced to its last event.
    state: Callable[[], State]
    # Where scratch directories go: on the store's filesystem, so that outputs are moved, not copied.
    scratch_root: Path

    @property
    def task(self) -> Task:
        """The run's task (public items)."""
        return self.task_of()

    @property
    def gate(self) -> ProtectedGate:
        """The run's gate (`ExpOS.gate`)."""
        return self.gate_of()

    def generators(self) -> dict[str, GeneratorFamily]:
        """The run's generator families."""
        return dict(self.task.generators())

    def guard(self, reason: str, subcategory: Subcategory | None = None) -> None:
        """A guard's refusal: raised (and recorded by the door) unless the run's policy waives it."""
        guard(self.guards, reason, subcategory)

    def own_events(self, *kinds: str) -> list[Event]:
        """The harness's own records of these kinds: read by author, never "any event of this kind"."""
        return list(self.ledger.events(kinds=kinds, role="harness"))

    def scratch(self) -> Path:
        """A private directory on the store's filesystem (outputs are moved, not copied)."""
        return new_scratch(self.scratch_root)

    @staticmethod
    def drop_scratch(path: Path) -> None:
        drop_scratch(path)


def guard(guards: Waiver, reason: str, subcategory: Subcategory | None = None) -> None:
    """A guard's refusal under `guards`: raised unless the policy waives it (the session's and a
    tool context's `guard`)."""
    refusal = ToolRefused(reason, subcategory)
    if not guards.waives(refusal):
        raise refusal


def new_scratch(root: Path) -> Path:
    """A fresh private directory under `root` (the run's `scratch/`)."""
    root.mkdir(exist_ok=True)
    return Path(tempfile.mkdtemp(dir=root))


def drop_scratch(path: Path) -> None:
    """Remove a scratch directory. The common case first: outputs were moved into the store,
    leaving empty directories one level deep, which a few rmdir calls remove without rmtree's
    per-entry walk."""
    try:
        with os.scandir(path) as entries:
            subdirs = [e.path for e in entries if e.is_dir(follow_symlinks=False)]
        for d in subdirs:
            os.rmdir(d)
        os.rmdir(path)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
