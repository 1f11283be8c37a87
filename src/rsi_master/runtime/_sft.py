"""SFT with TRL's SFTTrainer: full fine-tuning or LoRA (merged back into full weights)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rsi_master.runtime._spec import TrainSpec
from rsi_master.runtime._trainer_args import base_args, quiet

# Every linear layer of the Llama block: on a 1M-parameter model, adapting only attention
# leaves too little capacity to learn a new output format (the preliminary study).
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def lora_targets(model: Any, choice: str) -> list[str] | str:
    """Modules LoRA adapts: for "default", the Llama block's linear layers (the shipped
    model's study) and PEFT's own default for every other architecture, or every linear
    layer where PEFT has none; "all-linear" everywhere else."""
    if choice == "all-linear":
        return "all-linear"
    model_type = getattr(model.config, "model_type", None)
    if model_type == "llama":
        return list(LORA_TARGETS)
    from peft.utils import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as PEFT_DEFAULTS

    targets = PEFT_DEFAULTS.get(model_type or "")
    return list(targets) if targets else "all-linear"


def run_sft(
    model: Any, tokenizer: Any, rows: list[dict[str, Any]], spec: TrainSpec, work: Path, callbacks: list[Any]
) -> tuple[Any, int]:
    import datasets
    from trl import SFTConfig, SFTTrainer

    datasets.disable_progress_bars()
    dataset = datasets.Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]} for r in rows])
    config = SFTConfig(
        **base_args(spec, work, len(rows)),
        max_length=spec.max_length,
        completion_only_loss=not spec.prompt_loss,
        packing=False,
        dataset_num_proc=None,
    )
    peft_config = None
    if spec.method == "lora":
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=spec.lora_r,
            lora_alpha=spec.lora_alpha,  # type: ignore[arg-type]  # annotated int; the scale alpha / r takes any number
            lora_dropout=spec.lora_dropout,
            target_modules=lora_targets(model, spec.lora_targets),
            # GPT-2-style blocks store weights transposed (transformers' Conv1D); PEFT must know.
            fan_in_fan_out=any(type(m).__name__ == "Conv1D" for m in model.modules()),
            task_type="CAUSAL_LM",
        )
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=callbacks,
    )
    quiet(trainer)
    trainer.train()
    trained: Any = trainer.model
    if spec.method == "lora" and spec.lora_save == "merged":
        # Merge so that every checkpoint downstream is a plain full model.
        trained = trained.merge_and_unload()
    return trained, int(trainer.state.global_step)
