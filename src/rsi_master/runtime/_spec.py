"""Training specifications: one validated, persisted config per training run."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rsi_master.runtime._errors import InvalidParameterError

from ..tasks import MAX_LEARNING_RATE

Method = Literal["sft", "lora", "dpo", "grpo"]
METHODS: tuple[str, ...] = ("dpo", "grpo", "lora", "sft")
# The share of a warmup_stable_decay run's steps spent decaying: the run holds its peak rate
# (the rate the landscape's curves train at) and still ends annealed.
WSD_DECAY = 0.2


class TrainSpec(BaseModel):
    """Everything that decides a training run besides its data and parent checkpoint."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    version: int = 1
    method: Method = Field(description="sft (full fine-tuning), lora (merged after), dpo, grpo")
    task: str | None = Field(default=None, description="task name; required for dpo and grpo (checker)")
    learning_rate: float = Field(default=1e-3, gt=0.0, le=MAX_LEARNING_RATE, description="peak learning rate")
    batch_size: int = Field(default=32, ge=1, le=1024, description="examples per optimizer step")
    epochs: float = Field(default=1.0, gt=0.0, le=100.0, description="passes over the data (ignored with max_steps)")
    max_steps: int | None = Field(default=None, ge=1, le=1_000_000, description="optimizer steps; overrides epochs")
    lr_scheduler: Literal["cosine", "linear", "constant", "constant_with_warmup", "warmup_stable_decay"] = Field(
        default="cosine",
        description="warmup_stable_decay: constant after warm-up, cosine to 0 over the last WSD_DECAY of the steps",
    )
    warmup_ratio: float = Field(default=0.03, ge=0.0, le=0.5)
    weight_decay: float = Field(default=0.0, ge=0.0, le=1.0)
    max_length: int = Field(default=512, ge=8, le=4096, description="tokens per training sequence")
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    prompt_loss: bool = Field(
        default=False,
        description="sft/lora: also train on the prompt's tokens (loss over "
        "the whole sequence), not on the completion only",
    )
    lora_r: int = Field(default=16, ge=1, le=512, description="LoRA rank (lora only)")
    lora_alpha: float = Field(default=32.0, gt=0.0, le=4096.0, description="LoRA scaling numerator (lora only)")
    lora_dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    lora_save: Literal["merged", "adapter"] = Field(
        default="merged",
        description="lora: save the merged model, or the adapter alone bound to its parent's digest "
        "(a few MB instead of the whole model; the parent must be a full checkpoint)",
    )
    lora_targets: Literal["default", "all-linear"] = Field(
        default="default",
        description="modules LoRA adapts (lora only): default = PEFT's choice for the architecture "
        "(every linear layer of the shipped Llama's block), all-linear = every linear layer",
    )
    gradient_checkpointing: bool = Field(
        default=False, description="recompute activations in the backward pass: less memory, more time"
    )
    dpo_beta: float = Field(default=0.1, gt=0.0, le=10.0, description="DPO inverse temperature (dpo only)")
    grpo_num_generations: int = Field(default=8, ge=2, le=64, description="completions per prompt (grpo only)")
    grpo_max_completion_length: int | None = Field(
        default=None, ge=1, le=1024, description="defaults to the task's max_new_tokens"
    )
    grpo_temperature: float = Field(default=1.0, gt=0.0, le=2.0)
    grpo_beta: float = Field(default=0.0, ge=0.0, le=10.0, description="KL weight; 0 skips the reference model")

    @model_validator(mode="after")
    def _method_needs(self) -> TrainSpec:
        if self.method in ("dpo", "grpo") and not self.task:
            raise ValueError(f"method {self.method} needs a task (its checker builds pairs / rewards)")
        if self.prompt_loss and self.method not in ("sft", "lora"):
            raise ValueError(f"prompt_loss applies to sft and lora, not {self.method}")
        if self.lora_save == "adapter" and self.method != "lora":
            raise ValueError(f"lora_save=adapter applies to lora, not {self.method}")
        if self.method == "grpo" and self.batch_size % self.grpo_num_generations:
            raise ValueError(
                f"grpo batch_size ({self.batch_size}) must be a multiple of grpo_num_generations ({self.grpo_num_generations})"
            )
        return self


def make_spec(**kwargs: Any) -> TrainSpec:
    """Build a TrainSpec, turning pydantic's report into one readable ValueError."""
    method = kwargs.get("method")
    if method not in METHODS:
        raise InvalidParameterError(f"unknown training method {method!r}; known: {', '.join(METHODS)}")
    try:
        return TrainSpec(**kwargs)
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            loc = ".".join(str(x) for x in err["loc"]) or "spec"
            parts.append(f"{loc}: {err['msg']} (got {err.get('input')!r})" if err["loc"] else err["msg"])
        raise InvalidParameterError("invalid training parameters: " + "; ".join(parts)) from None
