"""The gate at data registration, driven the way an agent with a shell drives it: the
`expos` command in a subprocess, with evaluation items disguised by the meaning of
their characters."""

from __future__ import annotations

import json
import random
import subprocess
import sys

from rsi_master.expos import ExpOS

from .helpers import clean_rows, digits, fullwidth, invisible, look_alikes, number_words, split_rows


def _register(path: str, capability: str, rows: list[dict]) -> subprocess.CompletedProcess[str]:
    args = json.dumps({"source": "hand-written", "rows": rows})
    return subprocess.run(
        [sys.executable, "-m", "rsi_master.cli._expos", "--run", path, "--capability", capability, "data.register",
         "-"],
        input=args,
        capture_output=True,
        text=True,
        timeout=300,
    )


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
