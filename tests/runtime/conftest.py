"""Fixtures for runtime tests: a very small base model pretrained on the toy task."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import built_once
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

    def build(root: Path) -> Path:
        pretrain(
            [ToyTask()],
            root / "tiny",
            PretrainSpec(steps=10, docs_per_task=300, block_size=64, batch_size=8, warmup_steps=2),
            arch=TEST_SPEC,
            log=lambda _: None,
        )
        return root / "tiny"

    return built_once(tmp_path_factory, "tiny-base", build)


@pytest.fixture(scope="session")
def toy_data(tmp_path_factory, toy) -> Path:
    from rsi_master.runtime import generate

    def build(root: Path) -> Path:
        generate(toy, "plain", {"length": 4}, 0, 600, root / "toy.jsonl")
        return root / "toy.jsonl"

    return built_once(tmp_path_factory, "toy-data", build)


@pytest.fixture(scope="session")
def toy_sft(tmp_path_factory, tiny_base, toy_data) -> Path:
    """The tiny model after a short SFT run on the toy task (shared by evaluator tests; built once
    for all pytest-xdist workers, like the base and the data: tests read them, and copy to change)."""
    from rsi_master.runtime import train

    def build(root: Path) -> Path:
        spec = {"method": "sft", "learning_rate": 1e-2, "batch_size": 16, "max_steps": 60}
        return Path(train(toy_data, root, spec, parent=tiny_base).checkpoint_dir)

    return built_once(tmp_path_factory, "toy-sft", build)
