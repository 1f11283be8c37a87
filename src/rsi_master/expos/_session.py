"""An ExpOS session over one run directory: the contract, the state projected from the
ledger, and `call`, the single door through which every agent action passes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..errors import RsiMasterError
from ..events import GuardBlocked, Payload, dump_payload, typed, validate_payload
from ..ledger import Event, KeyDir
from ..rundir import RunDir
from ..tasks import TaskInputError, get_task, load_public_task, load_task_dir
from ._audit import AuditReport, audit
from ._backend import SimBackend, attach_backend, world_task
from ._call import UNAUTHENTICATED, call_tool
from ._caller import Caller
from ._capability import DEFAULT_TTL_S, CapabilityError, capability_id, issue_capability
from ._catalogue import load as _load
from ._context import ToolContext, drop_scratch, guard, new_scratch
from ._contract import CONTRACT_KIND, Budget, TaskContract
from ._errors import ToolRefused
from ._evaluation import stored_seal
from ._freeze import freeze_run
from ._gate import ProtectedGate, make_gate, seal_problems
from ._guards import GuardPolicy, Strict
from ._projection import Projection, SharedProjections
from ._reader import FINAL_KINDS, RunReader
from ._secrets import SealAccess, capability_of, key_dir_of, seal_key_of
from ._taxonomy import Subcategory
from ._writes import WriteQuota

if TYPE_CHECKING:
    from ..events import EvalRecord, TypedEvent
    from ..tasks import FileTask, GeneratorFamily, SealKey, Task

__all__ = ["FINAL_KINDS", "Caller", "ExpOS"]


class ExpOS:
    """Create with `ExpOS.create(run_dir, task)`, reopen with `ExpOS.open(run_dir)`.

    `guards` is the door's guard policy (`Strict` unless given): chosen by the harness's code,
    never by an agent. A session may be unguarded only if its run's contract records it
    (`ExpOS.create(..., guards=Unguarded())`); a Strict session opens any run."""

    def __init__(
        self,
        run: RunDir,
        contract: TaskContract,
        *,
        guards: GuardPolicy | None = None,
        projections: SharedProjections | None = None,
        gate_process: bool = False,
    ) -> None:
        guards = Strict() if guards is None else guards
        if not isinstance(guards, GuardPolicy):
            raise TypeError(f"guards must be a GuardPolicy (Strict or Unguarded), not {type(guards).__name__}")
        if not guards.guarded and contract.guards != guards.name:
            raise RsiMasterError(
                f"{run.path}: this run's contract fixes the `{contract.guards}` guard policy; "
                f"a {guards!r} session cannot open it"
            )
        self.run = run
        self.contract = contract
        self.guards = guards
        self._seal_key: SealKey | None = None
        self._projection: Projection | None = None
        # Where the session's projection folds: its own, or one shared with the sessions this
        # process runs in turn (the inline executor's nodes).
        self.projections = projections
        # Where this process asks about the protected items: its own draw (the harness), or an
        # evaluator process of its own (a node's process, where agents' tools run: `_gate`).
        self._in_process = not gate_process or contract.simulation is not None
        self._gate: ProtectedGate | None = None
        self._file_task: FileTask | None = None
        self._file_task_error: str | None = None
        if contract.task_source is not None:
            self._load_file_task()
        _load()
        # The contract names the experiment backend (real, or the simulated world it pins).
        self.backend = attach_backend(self)
        self._task: Task | None = None
        self.quota = WriteQuota(run.ledger, contract.budget.write_quota_bytes)
        # The read side: what code that only reads the run takes instead of the session.
        self.reader = RunReader(
            path=run.path,
            run_id=run.run_id,
            contract=contract,
            store=run.store,
            ledger=run.ledger,
            projected=self.projection,
            task_of=lambda: self.task,
        )

    # -- lifecycle -------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        run_dir: Path | str,
        task: str | Path | Task | None,
        *,
        budget: Budget | None = None,
        eval_limit: int | None = None,
        final_limit: int | None = None,
        key_dir: KeyDir | Path | str | None = None,
        allowed_methods: list[str] | None = None,
        allowed_generators: list[str] | None = None,
        allowed_teachers: list[str] | None = None,
        run_id: str | None = None,
        guards: GuardPolicy | None = None,
        eval_backend: Any = None,
        model: Any = None,
        world: Any = None,
    ) -> ExpOS:
        """Freeze a contract for `task` and record it as the run's first event.

        `model` is the base model: None for the shipped one, a directory or a repository id
        in the local Hugging Face cache, or a resolved `runtime.ModelSource`.

        `eval_limit` keeps the first N items of each split (all of them if None);
        `final_limit` overrides it for `final`, which only the harness scores, once per
        checkpoint: 0 keeps the whole split there (a final score as fine-grained as the
        world's), while the agents' dev and review evaluations stay short.

        The protected splits are drawn from a fresh seal secret written to the key
        directory (never the run directory); the contract keeps only a commitment to it.

        `guards` (Strict unless given) is recorded in the contract: the bench's no-ExpOS ablation
        creates its runs `Unguarded()`, and only such a run admits an unguarded session.
        `eval_backend` (a runtime `EvalBackend` or its name; default `transformers`) is sealed
        with the evaluator, so the contract's evaluator digest covers it.

        `world` (a `sim.SimWorld`) makes the run simulated: `task` must be its task name,
        and training and evaluation draw from it (`contract.simulation`)."""
        _load()  # the contract lists every registered tool each role may call
        guards = Strict() if guards is None else guards
        if not isinstance(guards, GuardPolicy):
            raise TypeError(f"guards must be a GuardPolicy (Strict or Unguarded), not {type(guards).__name__}")
        run, contract = freeze_run(
            run_dir,
            task,
            budget=budget,
            eval_limit=eval_limit,
            final_limit=final_limit,
            key_dir=key_dir,
            allowed_methods=allowed_methods,
            allowed_generators=allowed_generators,
            allowed_teachers=allowed_teachers,
            run_id=run_id,
            guards=guards,
            eval_backend=eval_backend,
            model=model,
            world=world,
        )
        try:
            return cls(run, contract, guards=guards)
        except BaseException:
            run.close()
            raise

    @classmethod
    def open(
        cls,
        run_dir: Path | str,
        *,
        key_dir: KeyDir | SealAccess | Path | str | None = None,
        writable: bool = True,
        guards: GuardPolicy | None = None,
        projections: SharedProjections | None = None,
        gate_process: bool = False,
    ) -> ExpOS:
        """`projections`: fold the ledger into the projection these sessions share (for sessions
        that run one at a time in this process), not into one of the session's own. `key_dir` a
        `SealAccess`: a job without the key directory, whose secrets the driver's keeper holds.
        `gate_process`: this is a node's process (agents' tools run here): the protected items of
        a real run are drawn in an evaluator process of its own, never here (`_gate`)."""
        run = RunDir.open(run_dir, key_dir=key_dir, writable=writable)
        first = next(run.ledger.events(limit=1), None)
        if first is None or first.kind != CONTRACT_KIND:
            run.close()
            raise RsiMasterError(f"{run_dir}: not an ExpOS run (its first event is not a task contract)")
        try:
            contract = typed(first, TaskContract).payload
            return cls(run, contract, guards=guards, projections=projections, gate_process=gate_process)
        except BaseException:
            run.close()
            raise

    def close(self) -> None:
        if self._gate is not None:
            self._gate.close()
        self.run.close()

    # -- protected items -----------------------------------------------------------------
    def seal_key(self) -> SealKey:
        """The key to this run's protected splits, from the operator key directory.

        A v2 contract needs the secret it committed to (SealSecretError without it: never
        the public seed); a v1 contract was frozen on the public seed and keeps it.
        """
        if self._seal_key is None:
            self._seal_key = seal_key_of(self.run.key_dir, self.run.run_id, self.contract.seal_commitment)
        return self._seal_key

    def _load_file_task(self) -> None:
        """A task directory's task, from the run's sealed copy (checked against the contract's
        digest before a byte of it is parsed or run)."""
        from ..runtime import EvaluationError

        source = self.contract.task_source
        assert source is not None
        root = self.sealed_evaluator() / "task"
        try:
            if self._in_process:
                task = load_task_dir(root, expected_digest=source.digest)
            else:  # without its protected splits: the pool comes from the gate, which drops their repeats
                task = load_public_task(
                    root, pinned=source.files, digest=source.digest, pool=lambda: self.gate().pool()
                )
        except (TaskInputError, EvaluationError) as exc:
            self._file_task_error = f"the run's sealed copy of task {self.contract.task!r} is unusable: {exc}"
            return
        self._file_task = task

    @property
    def task(self) -> Task:
        """The run's task, resolved once from its contract: a built-in task (public items), a task
        directory's sealed copy, or a simulated run's world task. Nothing after freeze looks a
        task up by name; everything that needs the run's task asks the session."""
        if self._task is None:
            self._task = self._resolve_task(None)
        return self._task

    def generators(self) -> dict[str, GeneratorFamily]:
        """The run's generator families."""
        return dict(self.task.generators())

    def protected_task(self) -> Task:
        """The contract's task holding this run's protected items: the harness's, and a simulated
        run's (its world is its evaluator). A node's process of a real run asks its gate instead."""
        if not self._in_process:
            raise RsiMasterError(
                "protected items are drawn in evaluator processes only: this process asks the run's gate"
            )
        return self._resolve_task(self.seal_key())

    def gate(self) -> ProtectedGate:
        """What this process asks of the protected items (`_gate`): verdicts, clean rows, digests."""
        if self._gate is None:
            self._gate = make_gate(
                self.contract,
                self.protected_task,
                lambda: self.seal_key().to_wire(),
                lambda: self.sealed_evaluator() / "task",
                in_process=self._in_process,
            )
        return self._gate

    def _resolve_task(self, seal_key: SealKey | None) -> Task:
        from ..runtime import SealSecretError

        if self.contract.task_source is not None:
            if self._file_task is None:
                raise SealSecretError(self._file_task_error or "task not loaded")
            return self._file_task  # its own items: no seal key draws them
        if self.contract.simulation is not None:
            assert isinstance(self.backend, SimBackend)
            return world_task(self.backend.world(self.run.store), seal_key)
        return get_task(self.contract.task, seal_key=seal_key)  # a built-in task

    def seal_problems(self) -> list[str]:
        """What is wrong with this run's seal, for verify and audit ([] when nothing): `_gate.seal_problems`."""
        return seal_problems(self.contract, self.gate())

    def sealed_evaluator(self) -> Path:
        """The run's stored seal, to be copied privately and checked before each evaluation."""
        return stored_seal(self.run.store, self.contract.evaluator.evaluator_artifact)

    def __enter__(self) -> ExpOS:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the projection ----------------------------------------------------------------
    def projection(self) -> Projection:
        """This session's one projection of the ledger, advanced to its last event (written by
        this process or any other). Folded in full at the first call (from where the shared fold
        stands, with `projections`), from new events after."""
        if self._projection is None:
            shared = self.projections
            self._projection = Projection(self.run.ledger) if shared is None else shared.projection(self.run.ledger)
        self._projection.advance()
        return self._projection

    # -- recording -------------------------------------------------------------------
    def record(
        self,
        caller: Caller | dict[str, str],
        kind: str | Payload,
        payload: Payload | dict[str, Any] | Sequence[dict[str, str]] | None = None,
        artifacts: Sequence[dict[str, str]] = (),
    ) -> Event:
        """Record an event: `record(caller, Model(...), artifacts)` with the kind's payload model,
        or `record(caller, kind, payload_dict, artifacts)`, validated through the kind's model.
        Nothing unvalidated is written; the stored payload is the fields set (`dump_payload`)."""
        if isinstance(kind, Payload):
            model = kind
            artifacts = payload if payload is not None else artifacts  # type: ignore[assignment]
        else:
            model = validate_payload(kind, payload if payload is not None else {})  # type: ignore[arg-type]
        actor = caller.actor() if isinstance(caller, Caller) else caller
        return self.run.record(
            {"kind": model.KIND, "actor": actor, "payload": dump_payload(model), "artifacts": list(artifacts)}
        )

    def guard(self, reason: str, subcategory: Subcategory | None = None) -> None:
        """A guard's refusal: raised (and recorded by the door) unless the session's policy waives it."""
        guard(self.guards, reason, subcategory)

    def evaluate(
        self, caller: Caller | dict[str, str], experiment_id: str, checkpoint: str, split: str
    ) -> TypedEvent[EvalRecord]:
        """Score a stored checkpoint on a split as the session's policy does, and record it
        (the typed `eval.record` event): tools and the harness's selection both use it."""
        return self.guards.evaluate(self, caller, experiment_id, checkpoint, split)  # type: ignore[arg-type]

    def events(self, *kinds: str, actor_id: str | None = None, role: str | None = None) -> list[Event]:
        return self.reader.events(*kinds, actor_id=actor_id, role=role)

    def own_events(self, *kinds: str) -> list[Event]:
        """The harness's own records of these kinds: read by author, never "any event of this kind"."""
        return self.reader.own_events(*kinds)

    def scratch(self) -> Path:
        """A private directory on the store's filesystem (outputs are moved, not copied)."""
        return new_scratch(self.run.path / "scratch")

    @staticmethod
    def drop_scratch(path: Path) -> None:
        drop_scratch(path)

    # -- identity ----------------------------------------------------------------------
    def issue(self, role: str, node: str, *, ttl_s: float | None = None) -> str:
        """A capability for `role` as `node` in this run (the harness hands it to that node's process)."""
        keys = key_dir_of(self.run.key_dir, "issuing a capability")
        return issue_capability(keys, self.run.run_id, role, node, ttl_s=DEFAULT_TTL_S if ttl_s is None else ttl_s)

    def authenticate(self, token: str, *, record: bool = True) -> Caller:
        """The caller a capability names; a token that grants nothing is refused and recorded
        (unless the run has ended, when nothing more is written, or `record` is False: the door
        counts its refusals and records them per peer and interval). A job without the key
        directory asks the driver's key holder, which records its refusals itself."""
        try:
            cap = capability_of(self.run.key_dir, self.run.run_id, token)
        except CapabilityError as exc:
            if record and not isinstance(self.run.key_dir, SealAccess) and self.final_seq() is None:
                self.record(UNAUTHENTICATED, GuardBlocked(tool=None, subcategory=None, reason=str(exc), args={}))
            raise ToolRefused(str(exc)) from None
        return Caller(cap.role, cap.node, capability_id(token))

    def final_seq(self) -> int | None:
        """The seq of the run's final record (the harness's `orchestra.finish`), or None while it runs."""
        return self.reader.final_seq()

    # -- the door ----------------------------------------------------------------------
    def tool_context(self) -> ToolContext:
        """The context a tool call gets (the door builds one per call; a guard policy's own
        implementation of a tool builds one to hand on to the tool's)."""

        def audit_of(experiments: list[str] | None) -> AuditReport:
            return audit(self, experiments=experiments)

        return ToolContext(
            contract=self.contract,
            store=self.run.store,
            ledger=self.run.ledger,
            guards=self.guards,
            backend=self.backend,
            record=self.record,
            evaluate=self.evaluate,
            protected_task=self.protected_task,
            gate_of=self.gate,
            audit=audit_of,
            task_of=lambda: self.task,
            state=lambda: self.projection().state,
            scratch_root=self.run.path / "scratch",
        )

    def call(self, caller: Caller, name: str, args: dict[str, Any] | BaseModel | None = None) -> BaseModel:
        """Run one tool for a caller (`call_tool`: role check, override check, validation, guards,
        action, record)."""
        return call_tool(self, caller, name, args)
