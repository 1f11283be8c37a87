"""Word-problem phrasing and completion formats for the arithmetic task.

Kept apart from the task class so the sentence inventory and the scratchpad layout
(the parts most likely to be tuned) can be read on their own.
"""

from __future__ import annotations

import random

__all__ = [
    "ADD_CLAUSES",
    "NAMES",
    "OBJECTS",
    "QUESTIONS",
    "STARTS",
    "SUB_CLAUSES",
    "apply",
    "phrase",
    "scratchpad_line",
]

NAMES = (
    "Ann",
    "Ben",
    "Cal",
    "Dee",
    "Eli",
    "Fay",
    "Gus",
    "Ida",
    "Jo",
    "Kim",
    "Lea",
    "Max",
    "Mia",
    "Ned",
    "Ola",
    "Pat",
    "Ray",
    "Sam",
    "Tia",
    "Uma",
)
OBJECTS = (
    "apples",
    "beads",
    "cards",
    "coins",
    "cups",
    "eggs",
    "grapes",
    "keys",
    "nails",
    "pens",
    "plums",
    "rocks",
    "shells",
    "stamps",
    "toys",
)
# Each slot lists phrasings in a fixed order; the `templates` knob keeps a prefix.
STARTS = ("{n} has {a} {o}.", "A box holds {a} {o}.", "There are {a} {o} in a bag.")
ADD_CLAUSES = ("{n} adds {b} more.", "Then {b} more arrive.", "{b} more are put in.")
SUB_CLAUSES = ("{n} gives away {b}.", "Then {b} are taken out.", "{b} of them get lost.")
QUESTIONS = ("How many {o} are there now?", "How many {o} now?", "What is the count of {o} now?")


def apply(op: str, a: int, b: int) -> int:
    """Apply one of the task's operators."""
    return a + b if op == "+" else a - b


def phrase(rng: random.Random, operands: list[int], ops: list[str], templates: int) -> str:
    """A word problem for `operands[0] ops[0] operands[1] ...` using `templates` phrasings per slot."""
    name, obj = rng.choice(NAMES), rng.choice(OBJECTS)
    parts = [rng.choice(STARTS[:templates]).format(n=name, a=operands[0], o=obj)]
    for op, value in zip(ops, operands[1:], strict=True):
        clauses = ADD_CLAUSES if op == "+" else SUB_CLAUSES
        parts.append(rng.choice(clauses[:templates]).format(n=name, b=value))
    parts.append(rng.choice(QUESTIONS[:templates]).format(o=obj))
    return " ".join(parts)


def scratchpad_line(a: int, op: str, b: int) -> str:
    """One operation worked digit by digit from the units, result digits reversed.

    `47+38: 7+8+0=5c1 4+3+1=8c0 r58`: each step adds (or subtracts) one digit pair and
    the incoming carry (borrow) and writes one digit and the outgoing carry, so every
    token depends only on nearby tokens. Writing the result least-significant digit
    first is what makes addition learnable for small transformers (Lee et al., 2023);
    the caller restores normal order after the `####` marker.
    """
    width = max(len(str(a)), len(str(b)))
    da, db = str(a).zfill(width), str(b).zfill(width)
    carry, steps, digits = 0, [], []
    for x, y in zip(reversed(da), reversed(db), strict=True):
        total = int(x) + int(y) + carry if op == "+" else int(x) - int(y) - carry
        digit, out = (total % 10, total // 10) if op == "+" else (total % 10, int(total < 0))
        steps.append(f"{x}{op}{y}{op}{carry}={digit}c{out}")
        digits.append(str(digit))
        carry = out
    if carry:  # subtraction never ends with a borrow: operands keep the result >= 0
        digits.append(str(carry))
    return f"{da}{op}{db}: {' '.join(steps)} r{''.join(digits)}"
