"""GRPO with TRL's GRPOTrainer; the reward is the task's checker on generated examples.

The reward never sees evaluation items: each training row carries its own `check`
entry from the generator, and `task.reward(row, completion)` scores against it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rsi_master.runtime._corrupt import cut_at_stop
from rsi_master.runtime._spec import TrainSpec
from rsi_master.runtime._trainer_args import base_args, quiet

if TYPE_CHECKING:
    from rsi_master.tasks import Task


def make_reward(task: Task) -> Any:
    stop = tuple(task.stop)

    def task_reward(prompts: list[str], completions: list[str], row_json: list[str], **_: Any) -> list[float]:
        # Cut at the stop string, as the evaluator does, so reward and score agree.
        return [float(task.reward(json.loads(r), cut_at_stop(c, stop))) for r, c in zip(row_json, completions)]

    task_reward.__name__ = f"{task.name}_checker"
    return task_reward


def run_grpo(
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
    from trl import GRPOConfig, GRPOTrainer

    datasets.disable_progress_bars()
    render = chat.prompt if chat is not None else (lambda p: p)
    dataset = datasets.Dataset.from_list([{"prompt": render(r["prompt"]), "row_json": json.dumps(r)} for r in rows])
    tokenizer.padding_side = "left"  # GRPO generates in batches
    config = GRPOConfig(
        **base_args(spec, work, len(rows)),
        num_generations=spec.grpo_num_generations,
        max_completion_length=spec.grpo_max_completion_length or task.decoding.max_new_tokens,
        temperature=spec.grpo_temperature,
        beta=spec.grpo_beta,
        remove_unused_columns=False,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[make_reward(task)],
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=callbacks,
    )
    quiet(trainer)
    trainer.train()
    return trainer.model, int(trainer.state.global_step)
