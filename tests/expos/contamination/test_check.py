"""Checks against real evaluation items: disguised copies are caught, clean data is not.

Each task's items are disguised the ways an agent would (whitespace, case, number
formatting, reordered clauses, all at once) and embedded between two normal generated
examples. Clean rows come from every generator family of every task.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsi_master.expos.contamination import (
    ContaminationReport,
    ProtectedItem,
    build_index,
    check,
    row_text,
)
from rsi_master.tasks import SPLITS, get_task

from .helpers import TASKS, case, clean_rows, embed, numbers, reorder, spaces, task_index

# Share of reordered copies that must be caught (fail or flag), per task. Reordering
# leaves the shingle set intact, but MinHash needs enough non-template shingles: short
# word problems and digit lists have few, and a function-calling item is a template
# catalogue plus one request sentence (see docs/contamination.md, "not caught").
REORDER_RECALL = {"arithmetic": 0.9, "knowledge": 0.9, "program_synthesis": 0.65, "function_calling": 0.45}
CLEAN_FLAG_SHARE = 0.005  # documented in docs/contamination.md


def _items(name: str) -> list:
    return [item for split in SPLITS for item in get_task(name).eval_items(split)[:200:20]]


def _caught(report: ContaminationReport, row: int, sample_id: str) -> str:
    found = [f for f in report.findings if f.row == row and f.sample_id == sample_id]
    return "fail" if any(f.verdict == "fail" for f in found) else "flag" if found else "miss"


@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("disguise", ["verbatim", "spaces", "case", "numbers", "spaces+case+numbers"])
def test_formatting_disguises_fail_with_the_right_item(name: str, disguise: str) -> None:
    rng = random.Random(disguise)
    items = _items(name)
    rows = []
    for k, item in enumerate(items):
        text = item.prompt
        if "numbers" in disguise:
            text = numbers(text, rng)
        if "case" in disguise:
            text = case(text, rng)
        if "spaces" in disguise:
            text = spaces(text, rng)
        rows.append({"prompt": embed(name, text, k), "completion": " 42\n\n"})
    report = check(task_index(name), rows)
    assert report.verdict == "failed"
    for k, item in enumerate(items):
        found = [f for f in report.findings if f.row == k and f.kind == "exact"]
        assert {(f.split, f.sample_id) for f in found} == {(item.sample_id.split("/")[1], item.sample_id)}
        assert all(f.verdict == "fail" for f in found)


@pytest.mark.parametrize("name", TASKS)
def test_reordered_clauses_are_caught(name: str) -> None:
    rng = random.Random(name)
    items = _items(name)
    rows = [embed(name, spaces(case(reorder(name, item.prompt), rng), rng), k) for k, item in enumerate(items)]
    report = check(task_index(name), rows)
    outcomes = [_caught(report, k, item.sample_id) for k, item in enumerate(items)]
    recall = sum(o != "miss" for o in outcomes) / len(outcomes)
    assert recall >= REORDER_RECALL[name], outcomes
    # A fail always names the item that was copied, never another one (a flag may be a
    # coincidence with the normal examples around the copy).
    assert all(f.sample_id == items[f.row].sample_id for f in report.findings if f.verdict == "fail")
    near = [f for f in report.findings if f.kind == "near_duplicate"]
    assert all(f.jaccard is not None and f.jaccard >= report.config.near_dup_threshold for f in near)


def test_reordered_knowledge_is_a_near_duplicate_fail() -> None:
    item = get_task("knowledge").eval_items("final")[7]
    text = reorder("knowledge", item.prompt)
    report = check(task_index("knowledge"), [embed("knowledge", text, 0)])
    kinds = {f.kind for f in report.findings if f.sample_id == item.sample_id}
    assert "near_duplicate" in kinds and "exact" not in kinds
    assert report.verdict == "failed"


@pytest.mark.parametrize("name", TASKS)
def test_clean_generated_data_does_not_fail(name: str) -> None:
    rows = clean_rows(name, 500)
    report = check(task_index(name), rows)
    assert report.rows == len(rows) >= 1500
    assert report.rows_failed == 0, report.findings[:3]
    assert report.rows_flagged <= CLEAN_FLAG_SHARE * len(rows), report.findings


def test_question_in_another_template_is_caught() -> None:
    item = get_task("arithmetic").eval_items("review")[3]
    question = item.prompt.removeprefix("Question: ").removesuffix("\nAnswer:")
    report = check(task_index("arithmetic"), [f"Q: {question}\nA: 12"])
    assert any(f.kind == "exact" and f.text_kind == "question" and f.sample_id == item.sample_id for f in report.findings)


def test_ngram_thresholds() -> None:
    words = "the violet heron crossed seven quiet rivers before dawn then rested beside an old mill near farrow".split()
    index = build_index([ProtectedItem("final", "toy/final/0000", (("prompt", " ".join(words)),))])
    short = "zz " + " ".join(words[:6]) + " yy"
    flag = "zz " + " ".join(words[:10]) + " yy"
    fail = "zz " + " ".join(words[:14]) + " yy"
    report = check(index, [short, flag, fail])
    by_row = {f.row: f for f in report.findings if f.kind == "ngram"}
    assert 0 not in by_row
    assert by_row[1].verdict == "flag" and by_row[1].words == 10
    assert by_row[2].verdict == "fail" and by_row[2].words == 14
    assert report.rows_failed == 1 and report.rows_flagged == 1 and report.verdict == "failed"


def test_short_items_count_as_exact_matches() -> None:
    index = build_index([ProtectedItem("dev", "toy/dev/0001", (("question", "Quorx blinks twice?"),))])
    assert index.n_texts == 0  # below min_exact_words: no evidence on its own
    index = build_index([ProtectedItem("dev", "toy/dev/0001", (("question", "Does the quorx blink twice?"),))])
    report = check(index, ["so: does THE quorx blink twice", "does the quorx blink"])
    assert (0, "exact", "fail") in [(f.row, f.kind, f.verdict) for f in report.findings]
    assert report.rows_failed == 1 and all(f.row == 0 for f in report.findings)


def test_report_shape_and_row_formats() -> None:
    index = task_index("knowledge")
    item = get_task("knowledge").eval_items("dev")[0]
    rows = [
        "nothing to see",
        {"prompt": item.prompt, "completion": " x"},
        {"text": item.prompt},
        {"messages": [{"role": "user", "content": item.prompt}]},
    ]
    report = check(index, rows)
    assert report.version == 2 and report.index_digest == index.digest
    assert report.rows == 4 and report.chars == sum(len(row_text(r)) for r in rows)
    assert report.rows_failed == 3 and {f.row for f in report.findings} == {1, 2, 3}
    assert ContaminationReport.model_validate_json(report.model_dump_json()) == report
    assert check(index, []).verdict == "clean"
    with pytest.raises(ValueError):
        check(index, [42])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(TASKS),
    position=st.integers(0, 599),
    seed=st.integers(0, 2**32),
)
def test_any_formatting_disguise_of_any_item_fails(name: str, position: int, seed: int) -> None:
    rng = random.Random(seed)
    split = SPLITS[position // 200]
    item = get_task(name).eval_items(split)[position % 200]
    text = spaces(case(numbers(item.prompt, rng), rng), rng)
    report = check(task_index(name), [embed(name, text, seed % 1000)])
    assert any(f.sample_id == item.sample_id and f.verdict == "fail" for f in report.findings)
