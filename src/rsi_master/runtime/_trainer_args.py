"""What every TRL trainer is given, whatever the method: the shared training arguments and a
quiet console (progress goes through `_train`'s log callback)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rsi_master.runtime._device import device_settings
from rsi_master.runtime._spec import WSD_DECAY, TrainSpec

__all__ = ["base_args", "quiet"]


def base_args(spec: TrainSpec, work_dir: Path, n_rows: int) -> dict[str, Any]:
    """TrainingArguments shared by all methods: the device `device_settings` chose (CPU: fp32;
    CUDA: bf16 mixed precision where supported), no checkpoint files, no hub."""

    device = device_settings()
    args: dict[str, Any] = {
        "output_dir": str(work_dir),
        "learning_rate": spec.learning_rate,
        "per_device_train_batch_size": spec.batch_size,
        "num_train_epochs": spec.epochs,
        "max_steps": spec.max_steps if spec.max_steps is not None else -1,
        "lr_scheduler_type": spec.lr_scheduler,
        "warmup_steps": spec.warmup_ratio,  # transformers 5: a float < 1 is a ratio of total steps
        "weight_decay": spec.weight_decay,
        "seed": spec.seed,
        "data_seed": spec.seed,
        "logging_steps": max(1, min(10, n_rows // spec.batch_size // 20 or 1)),
        "save_strategy": "no",
        "report_to": [],
        "bf16": device.bf16,
        "fp16": False,
        "use_cpu": device.device == "cpu",
        # TRL defaults to on; it only costs time on a tiny model, and saves memory on a big one.
        "activation_checkpointing": spec.gradient_checkpointing,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
    }
    if spec.lr_scheduler == "warmup_stable_decay":
        total = spec.max_steps or max(1, math.ceil(n_rows / spec.batch_size * spec.epochs))
        args["lr_scheduler_kwargs"] = {"num_decay_steps": max(1, round(WSD_DECAY * total))}
    return args


def quiet(trainer: Any) -> None:
    """Drop the trainer's stdout printer: progress goes through our callback instead."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
