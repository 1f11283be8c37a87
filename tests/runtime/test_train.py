from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_master.runtime import CheckpointLoadError, InvalidParameterError, dir_digest, train

pytestmark = [
    # PEFT 0.21 (peft_model.py) and TRL 1.16 (models/utils.py) still read the deprecated
    # `is_gradient_checkpointing` property of transformers 5; not ours to fix.
    pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"),
]


def _loads(ckpt: str | Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    AutoTokenizer.from_pretrained(str(ckpt), local_files_only=True)
    AutoModelForCausalLM.from_pretrained(str(ckpt), local_files_only=True)


def test_sft_writes_checkpoint_config_and_log(toy_sft, tiny_base):
    run = toy_sft.parent
    config = json.loads((run / "train_config.json").read_text())
    assert config["spec"]["method"] == "sft" and config["parent_digest"] == dir_digest(tiny_base)
    logs = [json.loads(x) for x in (run / "train_log.jsonl").read_text().splitlines()]
    assert logs and logs[-1]["step"] == 60
    # Tokenizer and generation config are the parent's, byte for byte.
    for name in ("tokenizer.json", "generation_config.json"):
        assert (toy_sft / name).read_bytes() == (tiny_base / name).read_bytes()
    _loads(toy_sft)


def test_sft_loss_falls(toy_sft):
    logs = [json.loads(x) for x in (toy_sft.parent / "train_log.jsonl").read_text().splitlines()]
    losses = [e["loss"] for e in logs if "loss" in e]
    assert losses[-1] < losses[0]


def test_lora_is_merged_into_a_plain_checkpoint(tmp_path, tiny_base, toy_data):
    r = train(
        toy_data,
        tmp_path,
        {"method": "lora", "max_steps": 4, "batch_size": 8, "lora_r": 4},
        parent=tiny_base,
        snapshot_steps=[2],
    )
    ckpt = Path(r.checkpoint_dir)
    assert not (ckpt / "adapter_config.json").exists()
    assert (tmp_path / "snapshots" / "step-000002" / "model.safetensors").is_file()
    _loads(ckpt)
    assert r.checkpoint_digest != dir_digest(tiny_base)


def test_dpo_runs_on_checker_verified_pairs(tmp_path, tiny_base, toy_data, toy):
    from rsi_master.runtime._dpo import preference_rows
    from rsi_master.runtime._jsonl import read_jsonl

    pairs = preference_rows(toy, read_jsonl(toy_data)[:50], 0)
    assert all(toy.reward({"check": {"answer": p["chosen"][:-1]}}, p["rejected"]) == 0.0 for p in pairs)
    r = train(
        toy_data,
        tmp_path,
        {"method": "dpo", "task": "toy", "max_steps": 3, "batch_size": 8},
        parent=tiny_base,
        task=toy,
    )
    assert r.steps == 3
    _loads(r.checkpoint_dir)


def test_grpo_runs_with_the_task_reward(tmp_path, tiny_base, toy_data, toy):
    r = train(
        toy_data,
        tmp_path,
        {
            "method": "grpo",
            "task": "toy",
            "max_steps": 2,
            "batch_size": 4,
            "grpo_num_generations": 4,
            "learning_rate": 1e-3,
        },
        parent=tiny_base,
        task=toy,
    )
    logs = [json.loads(x) for x in Path(r.log_path).read_text().splitlines()]
    assert r.steps == 2 and any(k.startswith("rewards/") for e in logs for k in e)
    _loads(r.checkpoint_dir)


def test_bad_inputs_fail_before_training(tmp_path, tiny_base, toy_data):
    with pytest.raises(InvalidParameterError, match="does not exist"):
        train(tmp_path / "missing.jsonl", tmp_path / "a", {"method": "sft"}, parent=tiny_base)
    with pytest.raises(InvalidParameterError, match="learning_rate"):
        train(toy_data, tmp_path / "b", {"method": "sft", "learning_rate": 2.0}, parent=tiny_base)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(CheckpointLoadError, match="does not load"):
        train(toy_data, tmp_path / "c", {"method": "sft", "max_steps": 1}, parent=broken)


def test_warmup_stable_decay_holds_the_peak_rate_then_anneals(tmp_path, tiny_base, toy_data):
    """The last fifth of the steps decays; until then the rate is the peak (after warm-up)."""
    r = train(
        toy_data,
        tmp_path,
        {
            "method": "sft",
            "max_steps": 50,
            "batch_size": 8,
            "learning_rate": 1e-3,
            "lr_scheduler": "warmup_stable_decay",
            "warmup_ratio": 0.1,
        },
        parent=tiny_base,
    )
    logs = [json.loads(x) for x in (tmp_path / "train_log.jsonl").read_text().splitlines()]
    lr = {e["step"]: e["learning_rate"] for e in logs if "learning_rate" in e}
    stable = [v for step, v in lr.items() if 5 < step <= 40]  # 5 warm-up steps, 10 decay steps
    assert len(stable) >= 8 and all(v == pytest.approx(1e-3) for v in stable)
    decay = [v for step, v in sorted(lr.items()) if step > 40]
    assert decay == sorted(decay, reverse=True) and decay[-1] < 2.5e-4
    _loads(r.checkpoint_dir)


def _prompt_nll(ckpt: str | Path, prompts: list[str]) -> float:
    """Mean negative log-likelihood of the prompts' own tokens under a checkpoint."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(ckpt), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(ckpt), local_files_only=True).eval()
    losses = []
    with torch.no_grad():
        for text in prompts:
            ids = tok(text, return_tensors="pt").input_ids
            losses.append(float(model(input_ids=ids, labels=ids).loss))
    return sum(losses) / len(losses)


@pytest.mark.heavy
def test_prompt_loss_trains_on_the_prompt_tokens_too(tmp_path, tiny_base, toy_data):
    """Same data, steps and seed: only the run with `prompt_loss` learns the prompt template
    (`rev ...\\n=`), so the prompts are likelier under it than under completion-only SFT."""
    spec = {"method": "sft", "max_steps": 20, "batch_size": 16, "learning_rate": 1e-2}
    plain = train(toy_data, tmp_path / "plain", spec, parent=tiny_base)
    whole = train(toy_data, tmp_path / "whole", {**spec, "prompt_loss": True}, parent=tiny_base)
    assert json.loads((tmp_path / "whole" / "train_config.json").read_text())["spec"]["prompt_loss"] is True
    prompts = [json.loads(x)["prompt"] for x in toy_data.read_text().splitlines()[:64]]
    assert _prompt_nll(whole.checkpoint_dir, prompts) < _prompt_nll(plain.checkpoint_dir, prompts) - 0.1
    with pytest.raises(InvalidParameterError, match="prompt_loss applies to sft and lora"):
        train(toy_data, tmp_path / "dpo", {"method": "dpo", "task": "toy", "prompt_loss": True}, parent=tiny_base)
