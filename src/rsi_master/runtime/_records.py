"""Records the runtime returns; persisted next to artifacts and read by ExpOS."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer


class DataResult(BaseModel):
    """Output of a data operation (generate, filter, mix, dedup)."""

    model_config = ConfigDict(frozen=True)
    version: int = 1
    op: str = Field(description="generate | filter | mix | dedup")
    path: str = Field(description="the JSONL file written")
    n_rows: int = Field(description="rows in the output")
    sha256: str = Field(description="SHA-256 of the JSONL bytes")
    digest: str | None = Field(default=None, description="artifact digest when a store was given")
    spec: dict[str, Any] = Field(description="the operation's inputs, enough to redo it")


class TrainResult(BaseModel):
    """Output of a training run."""

    model_config = ConfigDict(frozen=True)
    version: int = 1
    method: str = Field(description="sft | lora | dpo | grpo")
    checkpoint_dir: str = Field(description="HF model directory (full weights, LoRA merged)")
    checkpoint_digest: str = Field(description="directory digest of the checkpoint")
    config_path: str = Field(description="the saved training config JSON")
    log_path: str = Field(description="the training log (JSON lines of trainer logs)")
    parent_digest: str | None = Field(
        default=None, description="directory digest of the parent checkpoint, measured on the bytes training loaded"
    )
    data_digest: str | None = Field(
        default=None, description="SHA-256 of the training data, measured on the bytes training read"
    )
    parent_base_digest: str | None = Field(
        default=None, description="directory digest of the base under an adapter parent, measured as loaded"
    )
    adapter_base_digest: str | None = Field(
        default=None, description="the base an adapter checkpoint is bound to (lora_save=adapter): the parent's digest"
    )
    config_digest: str | None = Field(default=None, description="artifact digest of the config, with a store")
    log_digest: str | None = Field(default=None, description="artifact digest of the log, with a store")
    steps: int = Field(description="optimizer steps taken")
    train_seconds: float = Field(description="wall time of the training loop")
    final_loss: float | None = Field(default=None, description="mean loss of the last logged steps")


class TrainConfig(BaseModel):
    """`train_config.json`, saved next to every checkpoint; the digests are of the bytes used."""

    spec: dict[str, Any] = Field(description="the TrainSpec")
    data: str = Field(description="the data path given (the bytes were read from a private copy)")
    data_sha256: str = Field(description="SHA-256 of the training data bytes that were read")
    n_rows: int = Field(description="rows trained on")
    parent: str = Field(description="the parent path given")
    parent_digest: str = Field(description="directory digest of the parent checkpoint bytes that were loaded")
    parent_base_digest: str | None = Field(
        default=None, description="directory digest of the base under an adapter parent, as loaded"
    )
    weights_read: list[str] = Field(
        default_factory=list,
        description="directory digests of other weights the run was seen to load beside its parent (none for a clean run)",
    )

    @model_serializer(mode="wrap")
    def _drop_no_reads(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A clean run's config keeps the bytes (and the digest the ledger cites) it had before this field.
        out = dict(handler(self))
        if not self.weights_read:
            out.pop("weights_read", None)
        return out


class SampleRecord(BaseModel):
    """One scored sample of a sealed evaluation."""

    model_config = ConfigDict(frozen=True)
    sample_id: str
    output: str = Field(description="generated text, cut at the first stop string")
    score: float = Field(description="checker score in [0, 1]; 0 when the checker failed")
    reason: str = Field(description="the checker's reason, or why the sample got 0")


class EvalResult(BaseModel):
    """Output of the sealed evaluator for one checkpoint on one split."""

    model_config = ConfigDict(frozen=True)
    version: int = 1
    task: str
    split: str
    checkpoint_dir: str
    checkpoint_digest: str = Field(description="directory digest of the evaluated checkpoint")
    evaluator_digest: str = Field(description="digest of the sealed evaluator copy that ran")
    tokenizer_digest: str | None = Field(description="SHA-256 of the checkpoint's tokenizer.json")
    generation_config_digest: str | None = Field(description="SHA-256 of the checkpoint's generation_config.json")
    template_digest: str = Field(description="SHA-256 of the task's prompt template")
    prompts_digest: str = Field(description="SHA-256 of all rendered prompts, in sample order")
    decoding: dict[str, Any] = Field(description="decoding actually used")
    stop: list[str] = Field(description="stop strings actually used")
    sample_ids: list[str] = Field(description="IDs of the samples scored, in order")
    n_expected: int = Field(description="number of items in the split")
    score: float = Field(description="mean sample score (the aggregate)")
    samples: list[SampleRecord]
    seconds: float = Field(description="wall time inside the evaluator process")
    record_digest: str | None = Field(default=None, description="artifact digest of this record, with a store")
    base_digest: str | None = Field(
        default=None, description="directory digest of the base a LoRA adapter checkpoint was scored on"
    )
    backend: dict[str, Any] | None = Field(default=None, description="the sealed evaluator's generation backend")
