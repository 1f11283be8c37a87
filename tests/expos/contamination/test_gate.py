"""The gate at data registration, driven the way an agent with a shell drives it: the
`expos` command in a subprocess, with evaluation items disguised by the meaning of
their characters."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from rsi_master.expos import ExpOS
from tests.helpers import capability_file

from .helpers import (
    ascii_look_alikes,
    clean_rows,
    cut_mid_word,
    cyrillic_zero,
    digits,
    fullwidth,
    invisible,
    invisible_everywhere,
    look_alikes,
    number_words,
    rn_for_m,
    split_rows,
)


def _register(path: str, capability: str, rows: list[dict]) -> subprocess.CompletedProcess[str]:
    args = json.dumps({"source": "hand-written", "rows": rows})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "rsi_master.cli._expos",
            "--run",
            path,
            "--capability-file",
            capability_file(capability),
            "data.register",
            "-",
        ],
        input=args,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.heavy
def test_disguised_review_items_are_refused_at_registration(tmp_path) -> None:
    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=4, allowed_teachers=["hand-written"]) as x:
        path = str(x.run.path)
        w1 = x.issue("worker", "w1")
        # The run's own protected items (drawn from its seal secret), as the attacker would want them.
        items = x.protected_task().eval_items("review")[:3]
    rng = random.Random(19)
    clean = [{"prompt": r["prompt"], "completion": r["completion"]} for r in clean_rows("arithmetic", 4)]
    attempts = {
        "look-alikes, invisible characters, fullwidth digits": [
            {"prompt": invisible(look_alikes(digits(items[0].prompt, "fullwidth"), rng), rng), "completion": " 1"}
        ],
        "numbers in words, cut over two rows": clean[:2]
        + [{"prompt": p, "completion": ""} for p in split_rows(number_words(items[1].prompt, rng), 2)]
        + clean[2:4],
        "fullwidth text, Devanagari digits, cut over prompt and completion": [
            dict(zip(("prompt", "completion"), split_rows(fullwidth(digits(items[2].prompt, "devanagari")), 2)))
        ],
    }
    for what, rows in attempts.items():
        out = _register(path, w1, rows)
        assert out.returncode == 3, (what, out.stdout, out.stderr)
        assert "overlaps protected evaluation items" in out.stderr and "Traceback" not in out.stderr, what
    honest = _register(path, w1, clean)
    assert honest.returncode == 0, honest.stderr
    with ExpOS.open(path, writable=False) as x:
        blocked = list(x.events("guard.blocked"))
        registered = list(x.events("data.register"))
    assert [(e.payload["tool"], e.payload["subcategory"], e.actor.id) for e in blocked] == [
        ("data.register", "data_provenance", "w1")
    ] * len(attempts)
    assert [e.payload["contamination"]["verdict"] for e in registered] == ["clean"]


# The character-level attacks inside one row, and those spread over several rows (two tests, each
# a subprocess per attack).
WITHIN_A_ROW = (
    "rn for every m",
    "0 for O, 1 for l, l for I",
    "Cyrillic O for every 0",
    "invisible characters inside words and for spaces",
)


@pytest.mark.heavy
@pytest.mark.parametrize("within_a_row", [True, False], ids=["within a row", "across rows"])
def test_items_the_character_reading_catches_are_refused_at_registration(tmp_path, within_a_row) -> None:
    """The red team's attacks that passed the word methods (docs/expos.md, attack 68), from
    a subprocess with a Worker's capability: each data set is refused and recorded."""
    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=4, allowed_teachers=["hand-written"]) as x:
        path = str(x.run.path)
        w1 = x.issue("worker", "w1")
        items = x.protected_task().eval_items("review")
    rng = random.Random(68)
    clean = [{"prompt": r["prompt"], "completion": r["completion"]} for r in clean_rows("arithmetic", 4)]
    zero = next(i for i in items if "0" in i.prompt)
    row = lambda text: {"prompt": text, "completion": ""}  # noqa: E731
    halves = split_rows(items[4].prompt, 2)
    cut = cut_mid_word(items[5].prompt, 2)
    attempts = {
        "rn for every m": [clean[0], row(rn_for_m(items[0].prompt)), clean[1]],
        "0 for O, 1 for l, l for I": [clean[0], row(ascii_look_alikes(items[1].prompt)), clean[1]],
        "Cyrillic O for every 0": [clean[0], row(cyrillic_zero(zero.prompt)), clean[1]],
        "invisible characters inside words and for spaces": [clean[0], row(invisible_everywhere(items[2].prompt, rng))],
        "cut mid-word over consecutive rows": [clean[0], *map(row, cut_mid_word(items[3].prompt, 3)), clean[1]],
        "halves in rows 1 and 3": [clean[0], row(halves[0]), clean[1], row(halves[1]), clean[2]],
        "halves cut mid-word, reversed, 4 rows apart": [row(cut[1]), *clean[:3], row(cut[0])],
    }
    attempts = {what: rows for what, rows in attempts.items() if (what in WITHIN_A_ROW) == within_a_row}
    assert len(attempts) in (3, 4)
    for what, rows in attempts.items():
        out = _register(path, w1, rows)
        assert out.returncode == 3, (what, out.stdout, out.stderr)
        assert "overlaps protected evaluation items" in out.stderr and "Traceback" not in out.stderr, what
    with ExpOS.open(path, writable=False) as x:
        blocked = list(x.events("guard.blocked"))
    assert [(e.payload["tool"], e.payload["subcategory"], e.actor.id) for e in blocked] == [
        ("data.register", "data_provenance", "w1")
    ] * len(attempts)
