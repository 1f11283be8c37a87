"""The experiment backend seam: what `experiment.submit` trains with and what evaluation
scores with. The real backend is TRL/PEFT training and the sealed evaluator; the simulated one
draws both from the world the contract pins (`contract.simulation`), on a simulated clock.
Everything around them (guards, gates, records, artifacts, audit) is the same code.

A backend also names the executor its runs' nodes run on (`process`: slot processes on real
time; `inline`: nodes in this process on the simulated clock), which the orchestra's
scheduler looks up; the session picks the backend from its contract alone.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import Simulation
from ..tasks import SimTask
from ._evaluation import adapter_base_of, measured_digest
from ._ports import EvalRun, ExperimentBackend, TrainRun

if TYPE_CHECKING:
    from ..artifacts import RunStore
    from ..events import Simulation
    from ..sim import SimWorld
    from ..tasks import SealKey, SimTask
    from ._contract import TaskContract

__all__ = [
    "ExperimentBackend",
    "RealBackend",
    "SimBackend",
    "attach_backend",
    "freeze_simulation",
    "world_task",
]

WORLD_FILE = "landscape.json"  # its first name: the sealed evaluator's digest covers it
CALL_SECONDS = 1.0  # simulated seconds one tool call takes (a real one: start-up, I/O, a gate)
EVALUATOR_FILE = "evaluator.json"


class RealBackend:
    name = "real"
    executor = "process"

    def before_call(self, tool: str) -> None:
        """A tool call's own cost on the run's clock: real calls take the time they take."""

    def train(
        self, ctx: TrainRun, data: Path, out_dir: Path, spec: Any, parent: Path, parent_base: Path | None = None
    ) -> Any:
        from ..runtime import train

        # The run's task, not a name to look up: a task directory's is the run's sealed copy.
        task = ctx.task if spec.task is not None else None
        return train(data, out_dir, spec, parent=parent, parent_base=parent_base, task=task)

    def evaluate(self, expos: EvalRun, checkpoint: str, split: str, *, store: bool = True) -> Any:
        from ..runtime import evaluate

        c = expos.contract
        # A LoRA adapter is scored on the base it is bound to (checked against the store).
        base = adapter_base_of(expos.run.store, checkpoint)
        return evaluate(
            expos.run.store.path(checkpoint),
            c.task,
            split,
            base=None if base is None else expos.run.store.path(base),
            seal_key=expos.seal_key(),
            evaluator=expos.sealed_evaluator(),
            expected_evaluator_digest=c.evaluator.evaluator_digest,
            store=expos.run.store if store else None,
            max_samples=len(c.evaluator.sample_ids[split]),
            batch_size=c.eval_batch_size,
        )


class SimBackend:
    """Training and evaluation from the contract's world (`runtime.sim_train`/`sim_evaluate`)."""

    name = "sim"
    executor = "inline"

    def __init__(self, world_digest: str) -> None:
        self.world_digest = world_digest
        self._protected: tuple[Any, dict[str, set[str]]] | None = None

    def world(self, store: RunStore) -> Any:
        """The world the contract pins, read from the run's store (once per process)."""
        return _world(store, self.world_digest)

    def before_call(self, tool: str) -> None:
        # Every call through the door takes simulated time, as a real one takes wall time: an
        # agent that only reads, or whose calls are all refused, still spends its budget rather
        # than looping at one instant of simulated time.
        from ..runtime import spend_simulated

        spend_simulated(CALL_SECONDS)

    def train(
        self, ctx: TrainRun, data: Path, out_dir: Path, spec: Any, parent: Path, parent_base: Path | None = None
    ) -> Any:
        from ..runtime import TrainingError, sim_train

        if parent_base is not None:  # stand-in checkpoints are never adapters
            raise TrainingError("a simulated run has no adapter checkpoints to train from")

        task = ctx.protected_task()
        if self._protected is None or self._protected[0] is not task:
            self._protected = (task, {s: {i.prompt for i in task.eval_items(s)} for s in ("dev", "review", "final")})
        return sim_train(
            _world(ctx.store, self.world_digest),
            data,
            out_dir,
            spec,
            parent=parent,
            protected=self._protected[1],
            examples_per_row=_simulation(ctx.contract).examples_per_row,
            jailed=ctx.contract.guards == "strict",
        )

    def evaluate(self, expos: EvalRun, checkpoint: str, split: str, *, store: bool = True) -> Any:
        from ..runtime import EvaluatorDigestError, sim_evaluate

        c = expos.contract
        # The seal check of the real evaluator: the stored world and evaluator files must be
        # the ones the contract pinned, or nothing is scored.
        measured = measured_digest(expos.run.store, c.evaluator.evaluator_artifact)
        if measured != c.evaluator.evaluator_digest:
            raise EvaluatorDigestError(
                f"sealed evaluator digest {measured} differs from the contract's {c.evaluator.evaluator_digest}"
            )
        return sim_evaluate(
            self.world(expos.run.store),
            expos.run.store.path(checkpoint),
            expos.protected_task(),
            split,
            n=len(c.evaluator.sample_ids[split]),
            evaluator_digest=c.evaluator.evaluator_digest,  # equal to the measured one (checked above)
            store=expos.run.store if store else None,
        )


_WORLDS: dict[str, Any] = {}


def _simulation(contract: TaskContract) -> Simulation:
    """The contract's simulation record (a simulated run's contract always has one)."""
    sim = contract.simulation
    if sim is None:
        raise RuntimeError("the simulated backend on a run whose contract has no simulation")
    return sim


def _world(store: Any, digest: str) -> Any:
    """The world stored under `digest` (read once per process and digest, refused if its
    bytes no longer hash to it)."""
    got = _WORLDS.get(digest)
    if got is None:
        from ..sim import loads_world

        got = loads_world(store.read_bytes(digest).decode(), f"world {digest[:12]}")
        if len(_WORLDS) > 64:
            _WORLDS.clear()
        _WORLDS[digest] = got
    return got


_SIM_TASKS: dict[tuple[str, SealKey | None], SimTask] = {}


def world_task(world: SimWorld, seal_key: SealKey | None = None) -> SimTask:
    """The world's task (public items without a `seal_key`): one instance per world and
    key in this process, so that every session of the run (each node's) shares it, and with it
    the contamination gate's index of its protected items."""

    key = (world.ident, seal_key)
    task = _SIM_TASKS.get(key)
    if task is None:
        if len(_SIM_TASKS) > 64:
            _SIM_TASKS.clear()
        task = _SIM_TASKS[key] = SimTask(world) if seal_key is None else SimTask(world, seal_key)
    return task


def attach_backend(session: Any) -> ExperimentBackend:
    """The backend the session's contract names: the real one, or the world it pins."""
    sim = session.contract.simulation
    if sim is None:
        return RealBackend()
    if sim.backend != "sim":  # pragma: no cover - the contract's Literal admits only "sim"
        raise ValueError(f"unknown experiment backend {sim.backend!r}")
    return SimBackend(sim.landscape_digest)


_SOURCES: str | None = None


def _sim_sources_digest() -> str:
    """Digest of the code that decides a simulated score (the simulator, the backend's runtime
    half and the simulated task): pinned in the sealed evaluator's digest, like the real
    evaluator's copy of its code."""
    global _SOURCES
    if _SOURCES is None:
        package = Path(__file__).parent.parent  # rsi_master
        files = [
            *sorted((package / "sim").glob("*.py")),
            package / "runtime" / "_sim.py",
            package / "tasks" / "_sim_task.py",
        ]
        lines = "".join(f"{p.parent.name}/{p.name}\t{hashlib.sha256(p.read_bytes()).hexdigest()}\n" for p in files)
        _SOURCES = hashlib.sha256(lines.encode()).hexdigest()
    return _SOURCES


# A simulated dataset row stands for this many training examples, and the contract's row cap is
# divided by it: a Worker asks for at most 20,000 / 500 = 40 rows where a real one asks for up to
# 20,000, and the world trains on the same number of examples (and repeats) either way. It
# divides the default cap, so the capped dataset stands for exactly 20,000 examples. The rows
# (generated, written, hashed, parsed and gated) cost CPU in proportion to their number, which is
# why a row stands for so many: at 50 examples a row (400 rows a dataset) they take about a
# third of a campaign.
EXAMPLES_PER_ROW = 500


def freeze_simulation(run: Any, world: Any, clock_start: float) -> tuple[str, str, str, Any]:
    """Store a simulated run's stand-in base checkpoint and sealed evaluator (the world and
    the evaluator's code digest); (base artifact, evaluator artifact, evaluator digest, the
    contract's `Simulation`)."""
    import tempfile

    from ..runtime import write_sim_checkpoint

    text = world.model_dump_json()
    with tempfile.TemporaryDirectory(prefix="rsi-sim-") as tmp:
        base = run.store.put_dir(write_sim_checkpoint(world.base_checkpoint(), Path(tmp) / "base", world))
        seal = Path(tmp) / "seal"
        seal.mkdir()
        (seal / WORLD_FILE).write_text(text)
        meta = {"backend": "sim", "sources_sha256": _sim_sources_digest(), "format": 1}
        (seal / EVALUATOR_FILE).write_text(json.dumps(meta, sort_keys=True))
        evaluator = run.store.put_dir(seal)
    world_digest = hashlib.sha256(text.encode()).hexdigest()
    _WORLDS[world_digest] = world
    sim = Simulation(
        landscape_digest=world_digest,
        landscape_ident=world.ident,
        landscape_seed=world.seed,
        preset=world.preset,
        clock_start=clock_start,
        examples_per_row=EXAMPLES_PER_ROW,
    )
    return base, evaluator, evaluator, sim
