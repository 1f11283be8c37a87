"""Rejected completions for DPO: small corruptions of a correct completion.

A corruption keeps the format (so DPO learns the content, not the layout) and is kept
only if the task's own checker scores it below the original: a "corruption" that is
still correct (a swapped pair of equal digits, a changed JSON space) would teach the
opposite of what we want.
"""

from __future__ import annotations

import random
import string
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rsi_master.tasks import Task


def cut_at_stop(text: str, stop: tuple[str, ...]) -> str:
    """What the evaluator would keep of a generation: everything before the first stop."""
    cuts = [text.find(s) for s in stop if s and s in text]
    return text[: min(cuts)] if cuts else text


def _mutate(body: str, rng: random.Random) -> str:
    if not body:
        return "x"
    kind = rng.randrange(4)
    digits = [i for i, c in enumerate(body) if c.isdigit()]
    if kind == 0 and digits:  # a wrong number keeps the layout intact
        i = rng.choice(digits)
        return body[:i] + rng.choice([d for d in string.digits if d != body[i]]) + body[i + 1 :]
    if kind == 1 and len(body) > 2:
        i = rng.randrange(len(body) - 1)
        return body[:i] + body[i + 1] + body[i] + body[i + 2 :]
    if kind == 2 and len(body) > 1:
        i = rng.randrange(len(body))
        return body[:i] + body[i + 1 :]
    letters = [i for i, c in enumerate(body) if c.isalpha()]
    if letters:
        i = rng.choice(letters)
        return body[:i] + rng.choice([c for c in string.ascii_lowercase if c != body[i].lower()]) + body[i + 1 :]
    return body[: len(body) // 2]


def corrupt(task: Task, row: dict[str, Any], rng: random.Random, attempts: int = 20) -> str | None:
    """A completion the checker scores lower than `row['completion']`, or None."""
    stop = tuple(task.stop)
    chosen = row["completion"]
    body = cut_at_stop(chosen, stop)
    suffix = chosen[len(body) :]
    good = task.reward(row, body)
    for _ in range(attempts):
        candidate = _mutate(body, rng)
        if candidate != body and task.reward(row, candidate) < good:
            return candidate + suffix
    return None
