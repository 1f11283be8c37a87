"""Task registry and evaluator spec."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rsi_master.tasks import (
    SPLITS,
    Task,
    UnknownTaskError,
    generators_spec,
    get_task,
    list_tasks,
    source_digest,
    task_source_files,
    task_spec,
)

from .helpers import TASK_NAMES


def test_four_tasks_are_registered():
    assert list_tasks() == ["arithmetic", "function_calling", "knowledge", "program_synthesis"]
    for name in list_tasks():
        assert get_task(name) is get_task(name)
        assert isinstance(get_task(name), Task) and get_task(name).name == name


@pytest.mark.parametrize("bad", ["gsm8k", "", None, 3])
def test_unknown_task_names_the_known_ones(bad):
    with pytest.raises(UnknownTaskError) as info:
        get_task(bad)  # type: ignore[arg-type]
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
    assert "known tasks: arithmetic, function_calling, knowledge, program_synthesis" in str(info.value)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_spec_pins_everything_without_protected_content(name):
    task = get_task(name)
    spec = task_spec(task)
    text = json.dumps(spec)
    assert spec["template"] == task.template and spec["stop"] == list(task.stop)
    assert spec["decoding"]["max_new_tokens"] == task.decoding.max_new_tokens
    for split in SPLITS:
        assert spec["sample_ids"][split] == [item.sample_id for item in task.eval_items(split)]
        assert len(spec["items_sha256"][split]) == 64
    assert task.eval_items("final")[0].prompt not in text
    assert all(path.startswith("rsi_master/tasks/") for path in spec["source_files"])
    assert spec == task_spec(task)


def test_source_files_cover_the_checkers():
    names = {path.name for path in task_source_files()}
    assert {
        "_dsl.py",
        "_base.py",
        "_arithmetic.py",
        "_function_calling.py",
        "_knowledge.py",
        "_program_synthesis.py",
    } <= names
    assert len(source_digest()) == 64


@pytest.mark.parametrize("name", TASK_NAMES)
def test_generators_spec_is_json_and_complete(name):
    task = get_task(name)
    spec = json.loads(json.dumps(generators_spec(task)))
    assert set(spec) == set(task.generators())
    for family in task.generators().values():
        assert [knob["name"] for knob in spec[family.name]["knobs"]] == [knob.name for knob in family.knobs]


def test_the_suite_imports_no_heavy_dependency():
    """Tasks are pure Python: the sealed evaluator and agents import them cheaply."""
    heavy = "('torch', 'transformers', 'trl', 'numpy')"
    code = f"import sys, rsi_master.tasks; print(sorted(m for m in {heavy} if m in sys.modules))"
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": src},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.strip() == "[]"
    for path in task_source_files():
        assert "import torch" not in path.read_text(), path.name


def test_a_private_seal_seed_gives_another_instance_with_other_items():
    public, private = get_task("knowledge"), get_task("knowledge", seal_seed=7)
    assert private is get_task("knowledge", seal_seed=7) and private is not public
    assert private.eval_items("dev")[0].prompt != public.eval_items("dev")[0].prompt
    assert [i.sample_id for i in private.eval_items("dev")] == [i.sample_id for i in public.eval_items("dev")]
    with pytest.raises(ValueError, match="seal_seed"):
        get_task("knowledge", seal_seed="7")  # type: ignore[arg-type]
