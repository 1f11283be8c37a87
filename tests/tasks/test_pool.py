"""Train-pool generator families on task directories: targets, knobs, filters, sampled rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_master.tasks import (
    POOL,
    POOL_PROMPTS,
    SAMPLE_PAIRS,
    SELF_DISTILL,
    get_task,
    load_task_dir,
    pool_families,
    sample_items,
    sampled_rows,
)

from .dir.helpers import make_task_dir, write_jsonl


def _task(tmp_path: Path, kind: str = "numeric", train: int = 20, **kw):
    return load_task_dir(make_task_dir(tmp_path / kind, kind, train=train, **kw))


def test_no_pool_no_families(tmp_path: Path) -> None:
    assert _task(tmp_path, train=0).generators() == {}


def test_families_and_their_methods(tmp_path: Path) -> None:
    fams = _task(tmp_path).generators()
    assert set(fams) == {POOL, POOL_PROMPTS, SELF_DISTILL, SAMPLE_PAIRS}
    assert fams[POOL].methods[0] == "sft" and "lora" in fams[POOL].methods
    assert fams[POOL_PROMPTS].methods == ("grpo",)
    assert fams[SAMPLE_PAIRS].methods == ("dpo",) and fams[SAMPLE_PAIRS].source == "checkpoint"
    with pytest.raises(ValueError, match=r"data\.sample"):
        fams[SELF_DISTILL].generate({}, 0, 4)


def test_numeric_default_target_is_the_worked_answer(tmp_path: Path) -> None:
    task = _task(tmp_path)
    target = {k.name: k for k in task.generators()[POOL].knobs}["target"]
    # GSM8K style: the `answer` field holds the working and `#### n`, which the scorer passes.
    assert set(target.choices) == {"reference", "answer"} and target.default == "answer"
    rows = task.generators()[POOL].generate({"target": "answer"}, 0, 5)
    for row in rows:
        assert "####" in row["completion"] and row["completion"].endswith("\n")
        assert task.reward(row, row["completion"]) == 1.0
    bare = task.generators()[POOL].generate({"target": "reference"}, 0, 5)
    assert all("####" not in r["completion"] and task.reward(r, r["completion"]) == 1.0 for r in bare)


@pytest.mark.parametrize("kind", ["exact_match", "multiple_choice", "function_call"])
def test_reference_targets_pass_the_scorer(tmp_path: Path, kind: str) -> None:
    task = _task(tmp_path, kind)
    rows = task.generators()[POOL].generate({"target": "reference"}, 3, 12)
    assert len(rows) == 12
    pool = {item.id: item for item in task.train_pool()}
    for row in rows:
        item = pool[row["item"]]
        assert row["prompt"] == item.prompt  # the task template, as evaluated
        assert task.scorer.score(item, row["completion"].rstrip("\n")).score == 1.0


def test_unit_tests_without_solutions_offer_prompts_only(tmp_path: Path) -> None:
    task = _task(tmp_path, "unit_tests", train=4)
    assert POOL not in task.generators() and POOL_PROMPTS in task.generators()


def test_unit_test_solutions_are_kept_only_when_they_pass(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "ut", "unit_tests", train=4)
    rows = [json.loads(line) for line in (root / "train.jsonl").read_text().splitlines()]
    for i, row in enumerate(rows):  # one wrong solution among right ones
        add = 300 + i
        row["solution"] = f"def f(x):\n    return x + {add + (1 if i == 2 else 0)}\n"
    write_jsonl(root / "train.jsonl", rows)
    task = load_task_dir(root)
    fam = task.generators()[POOL]
    assert {k.name: k for k in fam.knobs}["target"].default == "solution"
    kept = {r["item"] for r in fam.generate({}, 0, 8)}
    assert kept == {"t-0", "t-1", "t-3"}
    assert {r["item"] for r in fam.generate({"keep": "all"}, 0, 8)} == {"t-0", "t-1", "t-2", "t-3"}


def test_knobs_subset_template_length_and_epochs(tmp_path: Path) -> None:
    task = _task(tmp_path, train=40)
    fam = task.generators()[POOL]
    small = {r["item"] for r in fam.generate({"subset": 0.25}, 0, 30)}
    large = {r["item"] for r in fam.generate({"subset": 0.5}, 1, 60)}
    assert len(small) == 10 and len(large) == 20 and small < large  # nested subsets
    # n beyond the selection cycles through it: 3 passes, each item three times.
    rows = fam.generate({"subset": 0.25}, 0, 30)
    assert len(rows) == 30
    assert all(sum(r["item"] == i for r in rows) == 3 for i in small)
    cap = fam.generate({"template": "capability"}, 0, 3)
    assert all(r["prompt"].startswith(task.capability + "\n\n") for r in cap)
    mixed = fam.generate({"template": "mixed"}, 0, 40)
    assert 0 < sum(r["prompt"].startswith(task.capability) for r in mixed) < 40
    # The shortest quarter of the pool, and nothing longer than what it left out.
    short = fam.generate({"shortest": 0.25}, 0, 40)
    chosen = {r["item"] for r in short}
    lengths = {r["item"]: len(r["prompt"]) + len(r["completion"]) for r in fam.generate({}, 0, 40)}
    assert len(chosen) == 10 and max(lengths[i] for i in chosen) <= min(
        v for i, v in lengths.items() if i not in chosen
    )
    with pytest.raises(ValueError, match="unknown knob"):
        fam.generate({"epochs": 3}, 0, 3)
    assert fam.generate({}, 7, 10) == fam.generate({}, 7, 10)  # deterministic in the seed


def test_pool_prompts_carry_references_for_grpo(tmp_path: Path) -> None:
    task = _task(tmp_path)
    rows = task.generators()[POOL_PROMPTS].generate({}, 0, 6)
    assert all(r["completion"] == "" and isinstance(r["check"], float) for r in rows)
    good = next(i for i in task.train_pool() if i.id == rows[0]["item"])
    assert task.reward(rows[0], f"so #### {good.reference:g}") == 1.0


def test_pool_item_repeating_a_protected_item_is_never_a_row(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "leak", "exact_match", train=6)
    dev = [json.loads(line) for line in (root / "dev.jsonl").read_text().splitlines()]
    train = [json.loads(line) for line in (root / "train.jsonl").read_text().splitlines()]
    train.append({**dev[1], "id": "t-leak"})  # a dev item under another id
    write_jsonl(root / "train.jsonl", train)
    task = load_task_dir(root)
    protected = {i.prompt for s in ("dev", "review", "final") for i in task.eval_items(s)}
    for name in (POOL, POOL_PROMPTS):
        rows = task.generators()[name].generate({"keep": "all"} if name == POOL else {}, 0, 50)
        assert not {r["prompt"] for r in rows} & protected
        assert "t-leak" not in {r["item"] for r in rows}


def test_sampled_rows_keep_only_what_the_scorer_passes(tmp_path: Path) -> None:
    task = _task(tmp_path, "exact_match")
    items = sample_items(task, {"prompts": 3}, seed=0)
    assert len(items) == 3 and items == sample_items(task, {"prompts": 3}, seed=0)
    right = [it.reference[0] for it in items]
    outputs = [[right[0], "wrong", right[0]], ["nope", "no"], [right[2], "x", "y"]]
    params = {"keep_per_prompt": 2}
    rows, counts = sampled_rows(task, SELF_DISTILL, items, outputs, params)
    assert counts == {"prompts": 3, "sampled": 8, "passing": 3, "prompts_passing": 2}
    assert [r["completion"] for r in rows] == [right[0] + "\n", right[2] + "\n"]  # distinct passing only
    assert all(task.reward(r, r["completion"].strip()) == 1.0 for r in rows)
    pairs, _ = sampled_rows(task, SAMPLE_PAIRS, items, outputs, params)
    assert [(p["completion"], p["rejected"]) for p in pairs] == [
        (right[0] + "\n", "wrong\n"),
        (right[2] + "\n", "x\n"),
    ]
    with pytest.raises(ValueError, match="not a sampling family"):
        sampled_rows(task, POOL, items, outputs, params)


def test_builtin_tasks_have_no_pool_families() -> None:
    assert pool_families(get_task("arithmetic")) == {}


def test_a_target_no_item_passes_is_refused_with_the_knobs(tmp_path: Path) -> None:
    root = make_task_dir(tmp_path / "n", "numeric", train=6)
    rows = [json.loads(line) for line in (root / "train.jsonl").read_text().splitlines()]
    write_jsonl(root / "train.jsonl", [{**r, "solution": "I do not know"} for r in rows])
    fam = load_task_dir(root).generators()[POOL]
    assert {k.name: k for k in fam.knobs}["target"].default == "answer"  # the probe passed over the bad field
    with pytest.raises(ValueError, match="no pool item is left"):
        fam.generate({"target": "solution"}, 0, 3)
    assert len(fam.generate({"target": "solution", "keep": "all"}, 0, 3)) == 3
