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

from .helpers import (
    TASKS,
    case,
    clean_rows,
    digits,
    embed,
    fullwidth,
    invisible,
    invisible_spaces,
    lisu,
    look_alikes,
    number_words,
    numbers,
    reorder,
    spaces,
    split_rows,
    task_index,
)

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


CHARACTER_DISGUISES = {
    "look-alikes": lambda t, rng: look_alikes(t, rng),
    "fullwidth": lambda t, rng: fullwidth(t),
    "capitals in Lisu look-alikes": lambda t, rng: lisu(t),
    "invisible": lambda t, rng: invisible(t, rng),
    "invisible for spaces": lambda t, rng: invisible_spaces(t, rng),
    "digits arabic-indic": lambda t, rng: digits(t, "arabic-indic"),
    "digits devanagari": lambda t, rng: digits(t, "devanagari"),
    "digits fullwidth": lambda t, rng: digits(t, "fullwidth"),
    "number words": lambda t, rng: number_words(t, rng),
    "look-alikes+invisible+number words": lambda t, rng: invisible(look_alikes(number_words(t, rng), rng), rng),
    "fullwidth+invisible+digits persian": lambda t, rng: invisible(fullwidth(digits(t, "persian")), rng),
    "everything": lambda t, rng: spaces(invisible(look_alikes(case(digits(t, "thai"), rng), rng), rng), rng),
    "look-alikes+number words, invisible for spaces": lambda t, rng: invisible_spaces(
        look_alikes(number_words(t, rng), rng), rng
    ),
}


@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("disguise", list(CHARACTER_DISGUISES))
def test_character_disguises_fail_with_the_right_item(name: str, disguise: str) -> None:
    """Characters that look or read the same (docs/contamination.md, Normalisation):
    every disguised copy is an exact match of the item it copies."""
    rng = random.Random(f"{name}/{disguise}")
    items = _items(name)
    disguised = [CHARACTER_DISGUISES[disguise](item.prompt, rng) for item in items]
    if all(d == item.prompt for d, item in zip(disguised, items)):
        pytest.skip(f"{name} items hold no digits")
    rows = [{"prompt": embed(name, d, k), "completion": " 42\n\n"} for k, d in enumerate(disguised)]
    report = check(task_index(name), rows)
    assert report.verdict == "failed" and report.rows_failed == len(items)
    for k, item in enumerate(items):
        found = {(f.sample_id, f.verdict) for f in report.findings if f.row == k and f.kind == "exact"}
        assert (item.sample_id, "fail") in found, (disguise, k, rows[k])


@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("layout", ["two rows", "three rows", "prompt and completion", "three rows, disguised"])
def test_items_split_over_rows_fail(name: str, layout: str) -> None:
    """An item cut into consecutive rows, or into a row's prompt and completion, is one
    copy: the finding names its first and last row."""
    rng = random.Random(f"{name}/{layout}")
    items = _items(name)
    clean = clean_rows(name, 10)
    rows: list[dict] = []
    spans: list[tuple[int, int]] = []
    for k, item in enumerate(items):
        rows.append(clean[k % len(clean)])
        text = item.prompt
        if layout == "prompt and completion":
            head, tail = split_rows(text, 2)
            spans.append((len(rows), len(rows)))
            rows.append({"prompt": head, "completion": tail})
            continue
        if "disguised" in layout:
            text = invisible(look_alikes(number_words(text, rng), rng), rng)
        pieces = split_rows(text, 3 if "three" in layout else 2)
        spans.append((len(rows), len(rows) + len(pieces) - 1))
        rows += [{"prompt": piece, "completion": ""} for piece in pieces]
    rows.append(clean[0])
    report = check(task_index(name), rows)
    for item, (first, last) in zip(items, spans):
        found = [f for f in report.findings if f.sample_id == item.sample_id and f.kind == "exact"]
        assert [(f.row, f.last_row, f.verdict) for f in found if f.text_kind == "prompt"] == [
            (first, None if first == last else last, "fail")
        ], (layout, item.prompt)
    pieces_rows = {r for first, last in spans for r in range(first, last + 1)}
    assert report.rows_failed == len(pieces_rows)
    assert all(f.row in pieces_rows for f in report.findings if f.verdict == "fail")


def test_invisible_characters_for_spaces_are_read_as_spaces_over_consecutive_rows_only() -> None:
    item = get_task("knowledge").eval_items("final")[11]
    pieces = [p.replace(" ", "\u200b") for p in split_rows(item.prompt, 2)]
    clean = [row_text(r) for r in clean_rows("knowledge", 2)]
    together = check(task_index("knowledge"), [clean[0], *pieces, clean[1]])
    assert [(f.row, f.last_row) for f in together.findings if f.kind == "exact" and f.text_kind == "prompt"] == [(1, 2)]
    # The same pieces with a clean row between: the second reading keeps them apart.
    apart = check(task_index("knowledge"), [pieces[0], clean[0], pieces[1]])
    assert not [f for f in apart.findings if f.kind == "exact" or (f.last_row or f.row) != f.row]


def test_batch_boundaries_lose_no_split_item(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of a few rows: every split item still fails, and the report is the
    report of one big batch (the carried rows add and lose nothing)."""
    from rsi_master.expos.contamination import _check

    name = "knowledge"
    clean = clean_rows(name, 20)
    rows: list = []
    for k, item in enumerate(_items(name)):
        rows += clean[k : k + 3] + [{"prompt": p, "completion": ""} for p in split_rows(item.prompt, 3)]
    whole = check(task_index(name), rows)
    monkeypatch.setattr(_check, "_BATCH_CHARS", 700)  # two or three rows per batch
    small = check(task_index(name), rows)
    assert small == whole
    assert len({(f.row, f.sample_id, f.text_kind, f.kind) for f in small.findings}) == len(small.findings)
    assert {f.sample_id for f in small.findings if f.verdict == "fail"} >= {i.sample_id for i in _items(name)}


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
    assert all(f.last_row is None for f in report.findings)  # no clean row runs on into the next


@pytest.mark.parametrize("name", TASKS)
def test_character_rules_leave_generated_rows_alone(name: str) -> None:
    """The generators write ASCII and digits: folding and number words change nothing
    in honest data, so they cannot add a false positive to a default run."""
    from rsi_master.expos.contamination._keys import token_keys
    from rsi_master.expos.contamination._normalise import _normalised, _spans
    from rsi_master.expos.contamination._numbers import spelled_numbers

    text = "\x00".join(row_text(r) for r in clean_rows(name, 300, seed=5))
    assert text.isascii()
    c = _normalised(text)
    starts, ends, _ = _spans(c)
    assert spelled_numbers(c, starts, ends, token_keys(c, starts, ends)) is None


def test_question_in_another_template_is_caught() -> None:
    item = get_task("arithmetic").eval_items("review")[3]
    question = item.prompt.removeprefix("Question: ").removesuffix("\nAnswer:")
    report = check(task_index("arithmetic"), [f"Q: {question}\nA: 12"])
    assert any(
        f.kind == "exact" and f.text_kind == "question" and f.sample_id == item.sample_id for f in report.findings
    )


def test_ngram_thresholds() -> None:
    words = [
        "the",
        "violet",
        "heron",
        "crossed",
        "seven",
        "quiet",
        "rivers",
        "before",
        "dawn",
        "then",
        "rested",
        "beside",
        "an",
        "old",
        "mill",
        "near",
        "farrow",
    ]
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


def test_ngram_runs_cross_row_boundaries() -> None:
    words = [
        "the",
        "violet",
        "heron",
        "crossed",
        "seven",
        "quiet",
        "rivers",
        "before",
        "dawn",
        "then",
        "rested",
        "beside",
        "an",
        "old",
        "mill",
        "near",
        "farrow",
    ]
    index = build_index([ProtectedItem("final", "toy/final/0000", (("prompt", " ".join(words)),))])
    rows = ["zz yy", "aa " + " ".join(words[:5]), " ".join(words[5:9]), " ".join(words[9:14]) + " bb", "cc"]
    report = check(index, rows)
    assert [(f.kind, f.row, f.last_row, f.words, f.verdict) for f in report.findings] == [("ngram", 1, 3, 14, "fail")]
    assert report.rows_failed == 3 and report.verdict == "failed"
    # Rows out of order are no copy of the text.
    report = check(index, [rows[3], rows[1], rows[2]])
    assert report.verdict == "flagged" and {f.words for f in report.findings} == {9}


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
