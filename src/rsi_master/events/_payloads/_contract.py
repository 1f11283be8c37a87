"""The task contract: what a run may do, frozen at run start as the payload of its first
event (`contract.freeze`). Lives with the event payloads because it is one; `expos` re-exports it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from .._base import Payload, Record, kind

__all__ = [
    "CONTRACT_KIND",
    "CONTRACT_VERSION",
    "BaseModelSource",
    "Budget",
    "EvaluatorSpec",
    "Simulation",
    "TaskContract",
    "TaskSource",
]

CONTRACT_KIND = "contract.freeze"
# v1: protected splits from the public seed in the source (readable, kept for old runs).
# v2: from a per-run seal secret in the operator key directory, committed to here.
CONTRACT_VERSION = 2


class Budget(Record):
    max_experiments: int = Field(default=64, ge=1, description="Training experiments the whole run may start.")
    max_train_steps: int = Field(default=400, ge=1, description="Optimizer steps one experiment may take.")
    max_rows: int = Field(default=20_000, ge=1, description="Rows one dataset may hold.")
    wall_seconds: float | None = Field(
        default=None,
        gt=0,
        description="Read by nothing: a run's wall-clock budget is recorded once, as `orchestra.start`'s "
        "`budget_s`, which the scheduler reads. Runs written before that may carry a copy here.",
    )
    write_quota_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1,
        description="Ledger bytes one capability may write through the door (its calls' events, refusals "
        "included); a call from a capability at its quota is refused.",
    )


class EvaluatorSpec(Record):
    """Everything that decides a score, pinned by digest. Holds no protected item."""

    evaluator_digest: str = Field(description="Digest of the sealed evaluator copy (code + task suite).")
    evaluator_artifact: str = Field(description="Store digest of the sealed copy in this run.")
    template_sha256: str = Field(description="SHA-256 of the prompt template.")
    decoding: dict[str, Any] = Field(description="Fixed decoding parameters.")
    stop: list[str] = Field(description="Fixed stop strings.")
    stop_sha256: str = Field(description="SHA-256 of the canonical stop list.")
    sample_ids: dict[str, list[str]] = Field(description="Preregistered sample IDs per split.")
    items_sha256: dict[str, str] = Field(description="Digest of each split's sealed items.")
    backend: dict[str, Any] = Field(
        default_factory=lambda: {"name": "transformers"},
        description="Generation backend and its settings (`transformers` or `vllm`); sealed with the evaluator "
        "(its `backend.json`), so the evaluator digest covers them.",
    )


class TaskSource(Record):
    """A task read from a directory: its files, copied into the sealed evaluator at freeze (the
    harness's own copy; the directory itself is never read again). Holds no protected item."""

    files: dict[str, str] = Field(description="Each file of the task directory (relative path -> SHA-256).")
    digest: str = Field(description="Manifest digest of those files (sorted `path<TAB>sha256` lines).")
    format: Literal["plain", "chat"] = Field(description="Prompt format: plain text, or the model's chat template.")
    scorer: str = Field(description="Scorer kind named in task.toml.")
    train_items: int = Field(ge=0, description="Items of the `train` pool agents may use (0: no pool).")
    train_dropped: int = Field(
        ge=0, description="`train` items dropped at load because they repeat a protected item (same id or content)."
    )


class BaseModelSource(Record):
    """Where a user-given base model came from (`--model`); its bytes are pinned by the
    contract's base_model_digest, which the stored copy must match."""

    spec: str = Field(description="The --model argument: the repository id, or the directory (absolute).")
    path: str = Field(description="The local directory the files were read from (a cache snapshot for a repo id).")
    repo_id: str | None = Field(default=None, description="Repository id, when resolved from the local HF cache.")
    revision: str | None = Field(default=None, description="Revision asked for with `id@revision`, if any.")
    architecture: str = Field(description="The config's model_type.")
    tree_digest: str = Field(description="Digest of every defining file (weights, config, tokenizer, template).")
    files: dict[str, str] = Field(description="Defining file (relative path) -> SHA-256.")


class Simulation(Record):
    """A simulated run: training and evaluation draw from a simulated world on a simulated clock
    (the `landscape_` fields keep the name the simulated world had when they were first recorded)."""

    backend: Literal["sim"] = Field(default="sim", description="The experiment backend (`sim`).")
    landscape_digest: str = Field(description="Store digest of the world file the run simulates.")
    landscape_ident: str = Field(description="The world's own digest of its parameters.")
    landscape_seed: int = Field(description="The generator seed of the world.")
    preset: str | None = Field(default=None, description="The generator preset, if the world came from one.")
    clock_start: float = Field(description="Seconds since the epoch when the run was frozen (its clock's start).")
    examples_per_row: int = Field(
        default=1,
        ge=1,
        description="Training examples one synthetic dataset row stands for (the budget's max_rows is divided by it).",
    )


@kind(CONTRACT_KIND)
class TaskContract(Payload):
    """Frozen at run start; every guard checks against it."""

    version: int = Field(default=1, ge=1, le=CONTRACT_VERSION, description="Contract schema version.")
    task: str = Field(description="Task name in the suite.")
    capability: str = Field(description="The target capability in words.")
    base_model_digest: str = Field(description="Directory digest of the base checkpoint.")
    base_model_artifact: str = Field(description="Store digest of the base checkpoint in this run.")
    base_tokenizer_sha256: str | None = Field(description="SHA-256 of the base tokenizer.json.")
    base_generation_config_sha256: str | None = Field(description="SHA-256 of the base generation_config.json.")
    base_model_source: BaseModelSource | None = Field(
        default=None, description="A user-given base model (`--model`); absent for the shipped model."
    )
    evaluator: EvaluatorSpec
    allowed_generators: list[str] = Field(description="Generator families (`task/family`) data may come from.")
    allowed_teachers: list[str] = Field(default_factory=list, description="Teacher models allowed to label data.")
    allowed_methods: list[str] = Field(description="Training methods allowed.")
    budget: Budget = Field(default_factory=Budget)
    permitted_tools: dict[str, list[str]] = Field(description="Tool names each role may call.")
    eval_batch_size: int = Field(default=100, ge=1, description="Evaluator batch size (does not change scores).")
    seal_commitment: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="SHA-256 commitment to the seal secret the protected splits are drawn from (v2); the secret "
        "itself stays in the operator key directory. None in v1 contracts (the public seed).",
    )
    guards: Literal["strict", "unguarded"] = Field(
        default="strict",
        description="The door's guard policy for this run: `strict` (refuse and record) or "
        "`unguarded` (the bench's no-ExpOS ablation: refusals waived, calls logged).",
    )
    task_source: TaskSource | None = Field(
        default=None, description="The task directory's files, for a task read from one; None for a built-in task."
    )
    simulation: Simulation | None = Field(
        default=None,
        description="Set for a simulated run (`rsi-master run --backend sim`): its world and clock. "
        "Absent for a real run.",
    )

    @model_validator(mode="after")
    def _seal_matches_version(self) -> TaskContract:
        if (self.version >= 2) != (self.seal_commitment is not None):
            raise ValueError("a v2 contract commits to a seal secret and a v1 contract does not")
        return self
