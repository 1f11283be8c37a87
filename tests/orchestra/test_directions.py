"""Directions from a task's generator families: one per family and declared training method."""

from __future__ import annotations

from rsi_master.orchestra import DEFAULT_TRAIN, default_directions
from rsi_master.tasks import get_task, load_task_dir

from ..tasks.dir.helpers import make_task_dir


def test_builtin_families_open_one_sft_direction_each():
    dirs = default_directions(get_task("arithmetic"))
    assert {d.method for d in dirs} == {"sft"} and len({d.family for d in dirs}) == len(dirs)
    assert all(d.train == DEFAULT_TRAIN for d in dirs)


def test_a_task_with_a_train_pool_opens_its_pool_directions(tmp_path):
    task = load_task_dir(make_task_dir(tmp_path / "t", "numeric", name="pool-numeric", train=12))
    dirs = {d.key(): d for d in default_directions(task)}
    assert set(dirs) == {
        "pool:sft",
        "pool:lora",
        "pool:dpo",
        "pool_prompts:grpo",
        "self_distill:sft",
        "self_distill:lora",
        "sample_pairs:dpo",
    }
    assert dirs["pool:lora"].train["lora_r"].choices == [4, 8, 16, 32]
    assert "target" in dirs["pool:sft"].knobs and "subset" in dirs["pool:sft"].knobs
    grpo = dirs["pool_prompts:grpo"]
    # The opening trial lies inside GRPO's own ranges (its batch a multiple of its generations).
    (first,) = grpo.enqueue
    assert first["t:batch_size"] in grpo.train["batch_size"].choices
    assert grpo.train["max_steps"].low <= first["t:max_steps"] <= grpo.train["max_steps"].high
    assert grpo.train["grpo_num_generations"].value == 4
