"""LoRA adapter checkpoints bound to their base digest: round trip, provenance, swap detection."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rsi_master.runtime import (
    ADAPTER_BASE_FILE,
    CheckpointLoadError,
    InvalidParameterError,
    dir_digest,
    evaluate,
    is_adapter,
    train,
)
from rsi_master.tasks import PUBLIC_SEAL_KEY
from tests.runtime.conftest import TOY_SOURCE, TOY_SPEC

pytestmark = [
    pytest.mark.heavy,
    pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"),
]

LORA = {"method": "lora", "max_steps": 30, "batch_size": 16, "lora_r": 4, "learning_rate": 1e-2}


@pytest.fixture(scope="module")
def adapter_run(tmp_path_factory, tiny_base, toy_data):
    out = tmp_path_factory.mktemp("adapter")
    return train(toy_data, out, {**LORA, "lora_save": "adapter"}, parent=tiny_base)


def _eval(ckpt, **kw):
    return evaluate(ckpt, TOY_SPEC, "dev", seal_key=PUBLIC_SEAL_KEY, extra_sources=[TOY_SOURCE], **kw)


def test_adapter_checkpoint_is_small_and_bound_to_its_base(adapter_run, tiny_base):
    ckpt = Path(adapter_run.checkpoint_dir)
    assert is_adapter(ckpt)
    assert not (ckpt / "model.safetensors").exists()  # no second copy of the base weights
    assert (ckpt / "adapter_model.safetensors").is_file()
    binding = json.loads((ckpt / ADAPTER_BASE_FILE).read_text())
    assert binding["base_digest"] == dir_digest(tiny_base) == adapter_run.adapter_base_digest
    for name in ("tokenizer.json", "generation_config.json"):
        assert (ckpt / name).read_bytes() == (tiny_base / name).read_bytes()


def test_adapter_round_trips_to_the_merged_models_scores(adapter_run, tiny_base, toy_data, tmp_path):
    """Scored on its base, the adapter gives what the same run merged gives: the adapter holds the training."""
    merged = train(toy_data, tmp_path / "merged", LORA, parent=tiny_base)
    scored = _eval(adapter_run.checkpoint_dir, base=tiny_base)
    assert scored.checkpoint_digest == adapter_run.checkpoint_digest
    assert scored.base_digest == dir_digest(tiny_base)  # provenance: base + adapter
    reference = _eval(merged.checkpoint_dir)
    assert [s.output for s in scored.samples] == [s.output for s in reference.samples]
    assert scored.score == reference.score


def test_adapter_without_its_base_is_refused(adapter_run):
    with pytest.raises(CheckpointLoadError, match="LoRA adapter: its base checkpoint"):
        _eval(adapter_run.checkpoint_dir)


def test_swapped_base_under_an_adapter_is_detected(adapter_run, tiny_base, toy_sft, tmp_path, toy_data):
    # Another model in the base's place: same architecture, loads fine, different bytes.
    with pytest.raises(CheckpointLoadError, match="swapped base"):
        _eval(adapter_run.checkpoint_dir, base=toy_sft)
    # The base's own directory edited in place after the adapter was made.
    base_copy = tmp_path / "base"
    shutil.copytree(tiny_base, base_copy)
    with open(base_copy / "config.json", "a") as f:
        f.write("\n")
    with pytest.raises(CheckpointLoadError, match="swapped base"):
        _eval(adapter_run.checkpoint_dir, base=base_copy)
    with pytest.raises(CheckpointLoadError, match="swapped base"):
        train(
            toy_data,
            tmp_path / "child",
            {"method": "sft", "max_steps": 1},
            parent=adapter_run.checkpoint_dir,
            parent_base=base_copy,
        )


def test_training_from_an_adapter_loads_base_then_adapter(adapter_run, tiny_base, toy_data, tmp_path):
    child = train(
        toy_data,
        tmp_path / "child",
        {"method": "sft", "max_steps": 2, "batch_size": 8},
        parent=adapter_run.checkpoint_dir,
        parent_base=tiny_base,
    )
    assert child.parent_digest == adapter_run.checkpoint_digest
    assert child.parent_base_digest == dir_digest(tiny_base)
    config = json.loads(Path(child.config_path).read_text())
    assert config["parent_base_digest"] == dir_digest(tiny_base)
    assert not is_adapter(child.checkpoint_dir)
    with pytest.raises(CheckpointLoadError, match="is a LoRA adapter"):
        train(toy_data, tmp_path / "c2", {"method": "sft", "max_steps": 1}, parent=adapter_run.checkpoint_dir)
    with pytest.raises(InvalidParameterError, match="needs a full parent"):
        train(
            toy_data,
            tmp_path / "c3",
            {**LORA, "lora_save": "adapter"},
            parent=adapter_run.checkpoint_dir,
            parent_base=tiny_base,
        )


def test_lora_save_adapter_only_for_lora():
    from rsi_master.runtime import make_spec

    with pytest.raises(InvalidParameterError, match="lora_save=adapter applies to lora"):
        make_spec(method="sft", lora_save="adapter")
