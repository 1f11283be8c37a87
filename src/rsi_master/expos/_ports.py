"""What the services of ExpOS take, as protocols: the session satisfies each, and each names
only what its service uses, so that no service module names the session's (the session is the
one module that puts them together).

- `Recorder` and `Evaluator`: the session's `record` and `evaluate`, lent to tool code.
- `Waiver`: what tool code asks the run's guard policy (does it waive a refusal, what a
  Worker's results list shows).
- `ExperimentBackend`: what trains and what scores (`_backend.py` has the real and the
  simulated one), with the run as each of its two operations reads it: `TrainRun` to train,
  `EvalRun` to score (the seal, the sealed evaluator's copy, the recorder).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..artifacts import RunStore
    from ..events import EvalRecord, Payload, TypedEvent
    from ..ledger import Event
    from ..rundir import RunDir
    from ..tasks import SealKey, Task
    from ._caller import Caller
    from ._contract import TaskContract
    from ._errors import ToolRefused
    from ._gate import ProtectedGate
    from ._reader import RunReader
    from ._state import Experiment, State

__all__ = ["AuditRun", "EvalRun", "Evaluator", "ExperimentBackend", "Recorder", "RunParts", "TrainRun", "Waiver"]


class Recorder(Protocol):
    """`ExpOS.record`: `record(caller, Model(...), artifacts)` or `record(caller, kind, payload, artifacts)`."""

    def __call__(
        self,
        caller: Caller | dict[str, str],
        kind: str | Payload,
        payload: Payload | dict[str, Any] | Sequence[dict[str, str]] | None = None,
        artifacts: Sequence[dict[str, str]] = (),
    ) -> Event: ...


class Evaluator(Protocol):
    """`ExpOS.evaluate`: score a stored checkpoint on a split as the run's policy does, and record it."""

    def __call__(
        self, caller: Caller | dict[str, str], experiment_id: str, checkpoint: str, split: str
    ) -> TypedEvent[EvalRecord]: ...


class Waiver(Protocol):
    """What tool code asks the run's guard policy (`GuardPolicy`)."""

    @property
    def guarded(self) -> bool: ...

    def waives(self, refusal: ToolRefused) -> bool: ...

    def visible(self, st: State, worker: str) -> list[Experiment]: ...


class TrainRun(Protocol):
    """The run as training reads it: its contract, store and task, and (for a simulated world,
    whose training models contamination) the protected items."""

    @property
    def contract(self) -> TaskContract: ...

    @property
    def store(self) -> RunStore: ...

    @property
    def task(self) -> Task: ...

    def protected_task(self) -> Task: ...


class RunParts(Protocol):
    """What every service reads of a run: its directory, contract and reader."""

    @property
    def run(self) -> RunDir: ...

    @property
    def contract(self) -> TaskContract: ...

    @property
    def reader(self) -> RunReader: ...


class EvalRun(RunParts, Protocol):
    """The run as scoring a checkpoint reads and records it: its directory, contract, reader and
    backend, the seal (key, sealed evaluator's copy, protected items) and the recorder."""

    @property
    def backend(self) -> ExperimentBackend: ...

    def record(
        self,
        caller: Caller | dict[str, str],
        kind: str | Payload,
        payload: Payload | dict[str, Any] | Sequence[dict[str, str]] | None = None,
        artifacts: Sequence[dict[str, str]] = (),
    ) -> Event: ...

    def seal_key(self) -> SealKey: ...

    def sealed_evaluator(self) -> Path: ...

    def protected_task(self) -> Task: ...


class AuditRun(RunParts, Protocol):
    """The run as the integrity audit reads it: its directory (verify, the files beside the
    ledger), contract and reader, and the gate its contamination checks ask."""

    def gate(self) -> ProtectedGate: ...


@runtime_checkable
class ExperimentBackend(Protocol):
    name: str
    executor: str  # "process" (slot processes, real time) or "inline" (in-process, simulated time)

    def train(
        self, run: TrainRun, data: Path, out_dir: Path, spec: Any, parent: Path, parent_base: Path | None = None
    ) -> Any:
        """Train `spec` from the checkpoint at `parent` on `data` into `out_dir` (runtime.TrainResult);
        `parent_base` is the base a LoRA adapter parent is bound to (None: a full checkpoint)."""

    def before_call(self, tool: str) -> None:
        """Spend a tool call's own time on the run's clock before the call runs."""

    def evaluate(self, run: EvalRun, checkpoint: str, split: str, *, store: bool = True) -> Any:
        """The sealed evaluation of a stored checkpoint on a split's preregistered items
        (runtime.EvalResult; its record kept in the run's store with `store`), not recorded."""
