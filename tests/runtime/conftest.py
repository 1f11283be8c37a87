"""Fixtures for runtime tests: a very small base model pretrained on the toy task."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runtime.toytask import ToyTask

TOY_SOURCE = Path(__file__).with_name("toytask.py")
TOY_SPEC = "toytask:ToyTask"  # how the sealed evaluator finds the toy task inside its seal


@pytest.fixture(scope="session")
def toy() -> ToyTask:
    return ToyTask()


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory) -> Path:
    """A ~20k-parameter Llama pretrained for a few steps: same code paths, seconds of compute."""
    from rsi_master.runtime._model import TEST_SPEC
    from rsi_master.runtime._pretrain import PretrainSpec, pretrain

    out = tmp_path_factory.mktemp("models") / "tiny"
    pretrain(
        [ToyTask()],
        out,
        PretrainSpec(steps=10, docs_per_task=300, block_size=64, batch_size=8, warmup_steps=2),
        arch=TEST_SPEC,
        log=lambda _: None,
    )
    return out


@pytest.fixture(scope="session")
def toy_data(tmp_path_factory, toy) -> Path:
    from rsi_master.runtime import generate

    out = tmp_path_factory.mktemp("data") / "toy.jsonl"
    generate(toy, "plain", {"length": 4}, 0, 600, out)
    return out


@pytest.fixture(scope="session")
def toy_sft(tmp_path_factory, tiny_base, toy_data) -> Path:
    """The tiny model after a short SFT run on the toy task (shared by evaluator tests)."""
    from rsi_master.runtime import train

    out = tmp_path_factory.mktemp("sft")
    r = train(
        toy_data, out, {"method": "sft", "learning_rate": 1e-2, "batch_size": 16, "max_steps": 60}, parent=tiny_base
    )
    return Path(r.checkpoint_dir)
