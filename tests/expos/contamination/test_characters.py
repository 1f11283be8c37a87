"""The character reading (docs/contamination.md, "The character reading"): items written
with ASCII look-alikes, glued by invisible characters, cut inside words or spread over
rows fail with the item they copy; the generators' own data does not."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rsi_master.expos.contamination import build_index, check, protected_items
from rsi_master.expos.contamination._characters import skeleton, words
from rsi_master.expos.contamination._pieces import _extend
from rsi_master.tasks import SPLITS, get_task
from rsi_master.tasks._seal_key import SealKey

from .helpers import (
    TASKS,
    ascii_look_alikes,
    clean_rows,
    cut_mid_word,
    cyrillic_zero,
    invisible_everywhere,
    rn_for_m,
    split_rows,
    task_index,
)


def _reading(text: str) -> str:
    from rsi_master.expos.contamination._normalise import scan

    s, _ = skeleton(scan(text).c)
    return s.tobytes().decode()


def test_the_reading_is_the_ascii_skeleton_without_white_space() -> None:
    assert _reading("How many?") == _reading("Hοw rnany") == _reading("H o w\u200bm a n y") == "howmany"
    assert _reading("Ida holds 10 lilies") == _reading("lDA HOLDS lO 1i|ies") == "ldaholdsloltlles".replace("t", "l")
    assert _reading("at 9:05") == _reading("at 9:\u041e5")  # a letter O for a leading zero
    assert _reading("83.0 km") == _reading("83.\u041e km") == "83km"
    rows, row = skeleton(np.frombuffer(b"co r\x00nner", dtype=np.uint8))
    assert rows.tobytes() == b"comner" and row.tolist() == [0, 0, 0, 1, 1, 1]  # rows are one stream


@given(st.binary(min_size=1, max_size=60), st.binary(max_size=60), st.data())
def test_extend_equals_the_plain_loop(a: bytes, b: bytes, data) -> None:
    s = np.frombuffer(a, dtype=np.uint8)
    t = np.frombuffer(a[: data.draw(st.integers(0, len(a)))] + b, dtype=np.uint8)
    at = data.draw(st.integers(0, len(s)))
    where = data.draw(st.integers(0, len(t)))
    right = min(len(s) - at, len(t) - where)
    left = min(at, where)
    plain_right = next((e for e in range(right) if s[at + e] != t[where + e]), right)
    plain_left = next((e for e in range(left) if s[at - 1 - e] != t[where - 1 - e]), left)
    args = (words(s), words(t), np.asarray([at]), np.asarray([where]))
    assert _extend(*args, np.asarray([right])).tolist() == [plain_right]
    assert _extend(*args, np.asarray([-left])).tolist() == [plain_left]


def _items(name: str, n: int = 10) -> list:
    return [item for split in SPLITS for item in get_task(name).eval_items(split)[: 10 * n : 10]]


def _row(text: str) -> dict:
    return {"prompt": text, "completion": ""}


# Each attack: item prompt -> rows, the item among clean rows (a stand-in row `C` each).
ATTACKS = {
    "rn for every m": lambda p, rng: ["C", rn_for_m(p), "C"],
    "ASCII look-alikes": lambda p, rng: ["C", ascii_look_alikes(p), "C"],
    "Cyrillic O for every 0": lambda p, rng: ["C", cyrillic_zero(p), "C"],
    "invisible inside words and for spaces": lambda p, rng: ["C", invisible_everywhere(p, rng), "C"],
    "halves cut mid-word, consecutive rows": lambda p, rng: ["C", *cut_mid_word(p, 2), "C"],
    "thirds cut mid-word, consecutive rows": lambda p, rng: ["C", *cut_mid_word(rn_for_m(p), 3), "C"],
}
# The one attack that leaves an item without a `0` as it was (and so is no attack on it).
NEEDS_A_ZERO = {"Cyrillic O for every 0"}
# Pieces in rows that are not next to each other: caught when each piece holds enough of
# the item (docs: two n-grams' worth of distinctive characters), so not for every item.
SPREAD = {
    "halves in rows 1 and 3": lambda p, rng: ["C", split_rows(p, 2)[0], "C", split_rows(p, 2)[1], "C"],
    "halves cut mid-word, reversed, 5 rows apart": lambda p, rng: [
        cut_mid_word(p, 2)[1],
        "C",
        "C",
        "C",
        "C",
        cut_mid_word(p, 2)[0],
        "C",
    ],
}
SPREAD_RECALL = {"arithmetic": 1.0, "knowledge": 0.9, "program_synthesis": 0.7, "function_calling": 0.6}


def _caught(name: str, attack, items: list, every_row: bool = True) -> list[bool]:
    """Per item: the data fails naming it (in every attacked row, with `every_row`), and
    no clean row fails."""
    rng = random.Random(name)
    clean = clean_rows(name, 4)
    out = []
    for k, item in enumerate(items):
        rows = [clean[(k + j) % len(clean)] if r == "C" else _row(r) for j, r in enumerate(attack(item.prompt, rng))]
        if all(r["prompt"] == item.prompt for r in rows if r not in clean):
            continue  # the disguise changes nothing (no `0` in the item)
        report = check(task_index(name), rows)
        item_rows = {j for j, r in enumerate(rows) if r not in clean}
        fails = {
            (f.sample_id, r)
            for f in report.findings
            if f.verdict == "fail"
            for r in range(f.row, (f.last_row or f.row) + 1)
        }
        named = {r for s, r in fails if s == item.sample_id}
        out.append((item_rows <= named if every_row else bool(named)) and {r for _, r in fails} <= item_rows)
    return out


@pytest.mark.heavy
@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_character_attacks_fail_with_the_right_item(name: str, attack: str) -> None:
    """Every attacked row fails, naming the item, and no clean row fails."""
    caught = _caught(name, ATTACKS[attack], _items(name))
    if not caught and attack in NEEDS_A_ZERO:
        pytest.skip(f"{name} items hold no `0`")
    assert caught, f"{attack} changed none of the {name} items: a broken attack tests nothing"
    assert all(caught), (attack, caught)


@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("attack", list(SPREAD))
def test_pieces_in_rows_apart_fail(name: str, attack: str) -> None:
    caught = _caught(name, SPREAD[attack], _items(name), every_row=False)
    assert sum(caught) >= SPREAD_RECALL[name] * len(caught), (attack, caught)


def test_long_pieces_fail_anywhere_and_short_ones_alone_do_not() -> None:
    name = "knowledge"
    item = get_task(name).eval_items("review")[3]
    clean = clean_rows(name, 200)
    head, tail = split_rows(item.prompt, 2)
    far = [*clean[:10], _row(tail), *clean[10:400], _row(head), *clean[400:]]
    report = check(task_index(name), far)
    assert {(f.row, f.sample_id) for f in report.findings if f.verdict == "fail"} == {
        (10, item.sample_id),
        (401, item.sample_id),
    }
    words_ = item.prompt.split()
    lone = [*clean[:10], _row(" ".join(words_[:4])), *clean[10:]]  # a short piece alone is no evidence
    assert check(task_index(name), lone).rows_failed == 0


@pytest.fixture(scope="module")
def sealed() -> dict:
    """Each task with secret-drawn protected splits, as a run's gate sees them."""
    return {name: get_task(name, seal_key=SealKey(secret=f"test-characters-{name}".encode() * 2)) for name in TASKS}


@pytest.mark.heavy
@pytest.mark.parametrize("name", TASKS)
def test_default_generated_data_has_no_false_hits(name: str, sealed: dict) -> None:
    """Every generator family of every task, default knobs, three seeds, against the
    task's sealed splits: the gate fails no row by the character reading (the other
    methods are held to docs/contamination.md's figures by test_check.py)."""
    task = sealed[name]
    index = build_index(protected_items(task, SPLITS))
    for family, generator in task.generators().items():
        for seed in (0, 1, 2):
            rows = generator.generate(None, seed, 600)
            report = check(index, rows)
            assert [f for f in report.findings if f.kind == "characters"] == [], (family, seed)


def test_look_alikes_of_a_word_opening_with_ol_fail() -> None:
    """`Ola` written `01a` (`0` for `O`, `1` for `l`): number formatting once read `01` as a
    number and dropped its leading zero, so the row read `la` where the item reads `ola`
    and the character reading (which must cover every character) let it through. Every
    arithmetic item naming Ola, in look-alikes among clean rows, fails naming the item."""
    name = "arithmetic"
    items = [i for s in SPLITS for i in get_task(name).eval_items(s) if " Ola " in f" {i.prompt} "][:40]
    assert len(items) >= 10
    caught = _caught(name, ATTACKS["ASCII look-alikes"], items)
    assert len(caught) == len(items) and all(caught), caught
