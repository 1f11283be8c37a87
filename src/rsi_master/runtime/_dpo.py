"""DPO with TRL's DPOTrainer on (correct, corrupted) completion pairs."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rsi_master.runtime._corrupt import corrupt
from rsi_master.runtime._errors import InvalidParameterError
from rsi_master.runtime._spec import TrainSpec
from rsi_master.runtime._trainer_args import base_args, quiet

if TYPE_CHECKING:
    from rsi_master.tasks import Task


def preference_rows(task: Task, rows: list[dict[str, Any]], seed: int) -> list[dict[str, str]]:
    """chosen = the row's (correct) completion; rejected = the row's own `rejected` where it has one
    (a failing sample of the same prompt, from `data.sample`), else a checker-verified corruption."""
    rng = random.Random(seed)
    pairs = []
    for row in rows:
        own = row.get("rejected")
        rejected = own if isinstance(own, str) else corrupt(task, row, rng)
        if rejected is not None:
            pairs.append({"prompt": row["prompt"], "chosen": row["completion"], "rejected": rejected})
    if not pairs:
        raise InvalidParameterError("no preference pairs could be built: every corruption still passed the checker")
    return pairs


def run_dpo(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    spec: TrainSpec,
    task: Task,
    work: Path,
    callbacks: list[Any],
    chat: Any = None,
) -> tuple[Any, int]:
    import datasets
    from trl import DPOConfig, DPOTrainer

    datasets.disable_progress_bars()
    pairs = preference_rows(task, rows, spec.seed)
    if chat is not None:  # pairs are built (and checked) on the task's text, then put in turns
        pairs = [
            {
                "prompt": chat.prompt(p["prompt"]),
                "chosen": chat.completion(p["chosen"]),
                "rejected": chat.completion(p["rejected"]),
            }
            for p in pairs
        ]
    dataset = datasets.Dataset.from_list(pairs)
    config = DPOConfig(**base_args(spec, work, len(dataset)), beta=spec.dpo_beta, max_length=spec.max_length)
    # ref_model=None: TRL copies the starting model as the frozen reference.
    trainer = DPOTrainer(
        model=model, args=config, train_dataset=dataset, processing_class=tokenizer, callbacks=callbacks
    )
    quiet(trainer)
    trainer.train()
    return trainer.model, int(trainer.state.global_step)
