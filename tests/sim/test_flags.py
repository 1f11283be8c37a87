"""Generator flags: presets validate, out-of-range values are refused in one line."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rsi_master.sim import PRESETS, GeneratorFlags, SimInputError, flags_from, generate_world


def test_presets_exist_and_differ():
    assert {"default", "hard", "calibrated"} <= set(PRESETS)
    assert PRESETS["hard"] != PRESETS["default"] != PRESETS["calibrated"]
    assert flags_from("default") == PRESETS["default"]


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"n_families": 1}, "n_families"),
        ({"n_families": 17}, "n_families"),
        ({"forget": -0.1}, "forget"),
        ({"plateau": (0.9, 0.3)}, "plateau"),
        ({"base_accuracy": (0.5, 0.6)}, "base_accuracy"),
        ({"methods": ("lora",)}, "methods"),
        ({"methods": ("sft", "ppo")}, "methods"),
        ({"split_sizes": {"dev": 5, "review": 200, "final": 240}}, "split sizes"),
        ({"split_sizes": {"dev": 200}}, "split_sizes"),
        ({"midpoint_steps": (0.1, 10.0)}, "midpoint_steps"),
        ({"seconds_per_step": 0}, "seconds_per_step"),
        ({"no_such_flag": 1}, "no_such_flag"),
    ],
)
def test_out_of_range_flags_give_one_line_errors(change, where):
    with pytest.raises(SimInputError, match=where) as exc:
        flags_from("default", **change)
    assert "\n" not in str(exc.value)
    with pytest.raises(ValidationError):
        GeneratorFlags.model_validate({**PRESETS["default"].model_dump(), **change})


def test_a_rule_across_flags_reads_as_its_own_message():
    with pytest.raises(SimInputError) as exc:
        flags_from("default", item_difficulty=0.9, item_skill=0.5)
    assert str(exc.value) == (
        "generator flags: item_difficulty + item_skill must leave at least 0.05 to the checkpoint's own draw"
    )


def test_flags_shape_the_world():
    many = generate_world(1, flags_from(n_families=12, knobs_per_family=(4, 4)))
    assert len(many.family_specs) == 12
    assert all(len(f.knobs) >= 3 for f in many.family_specs)  # four drawn, a pool may run dry
    only_sft = generate_world(1, flags_from(methods=("sft",)))
    assert all(f.methods == ["sft"] for f in only_sft.family_specs)
    slow = generate_world(1, flags_from(seconds_per_step=3.0))
    fast = generate_world(1, flags_from(seconds_per_step=0.3))
    f = fast.family_specs[0]
    from rsi_master.sim import SimRecipe

    r = SimRecipe(family=f.name, learning_rate=1e-3, batch_size=32, steps=1000, rows=10**6)
    assert slow.train(slow.base_checkpoint(), r, 0)[1] > 5 * fast.train(fast.base_checkpoint(), r, 0)[1]


def test_every_flag_is_documented():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "sim.md").read_text()
    missing = [name for name in GeneratorFlags.model_fields if name != "version" and f"`{name}`" not in doc]
    assert not missing
    for preset in PRESETS:
        assert f"`{preset}`" in doc
