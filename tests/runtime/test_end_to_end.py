"""The whole pipeline on a real task with the shipped base model (opt-in: minutes)."""

from __future__ import annotations

import pytest

from rsi_master.runtime import base_model_dir, evaluate, generate, train

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"),
]

# Program synthesis (program only) is the format the preliminary CPU study found fastest
# to learn: one default experiment moves it well clear of the base model's 0%.
TASK, FAMILY = "program_synthesis", "program_only"


def test_sft_raises_the_score_clearly_above_base(tmp_path):
    base = evaluate(base_model_dir(), TASK, "dev")
    data = generate(TASK, FAMILY, {}, 0, 5000, tmp_path / "data.jsonl")
    result = train(data.path, tmp_path / "run", {"method": "sft"})
    after = evaluate(result.checkpoint_dir, TASK, "dev")
    assert after.checkpoint_digest == result.checkpoint_digest
    assert after.score >= base.score + 0.15, (base.score, after.score)
