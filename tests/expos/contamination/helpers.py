"""Shared helpers: per-task indexes, clean generated rows, and the disguises an agent
would apply to an evaluation item before slipping it into training data."""

from __future__ import annotations

import random
import re
from functools import lru_cache

from rsi_master.expos.contamination import ContaminationIndex, build_index, protected_items
from rsi_master.tasks import get_task, list_tasks

TASKS = tuple(list_tasks())


@lru_cache(maxsize=None)
def task_index(name: str) -> ContaminationIndex:
    """The default index of one task (dev, review and final items), built once per session."""
    return build_index(protected_items(get_task(name)))


def clean_rows(name: str, n_per_family: int, seed: int = 11) -> list[dict]:
    """Rows from every generator family of a task (they never contain a sealed item)."""
    rows: list[dict] = []
    for family in get_task(name).generators().values():
        rows += family.generate(None, seed, n_per_family)
    return rows


def spaces(text: str, rng: random.Random) -> str:
    """Whitespace changes: doubled spaces, tabs, line breaks between words."""
    return re.sub(r" ", lambda _: rng.choice(["  ", "\t", " \n ", "   "]), text)


def case(text: str, rng: random.Random) -> str:
    return text.upper() if rng.random() < 0.5 else text.swapcase()


def numbers(text: str, rng: random.Random) -> str:
    """Number formatting: `31` -> `31.0` or `031`; thousands get a separator."""

    def one(m: re.Match[str]) -> str:
        value = int(m.group())
        if value >= 1000:
            return f"{value:,}"
        return rng.choice([f"{value}.0", f"0{value}", f"00{value}", f"{value}.00"])

    return re.sub(r"(?<![\d.])\d+(?![\d.])", one, text)


def reorder(name: str, prompt: str) -> str:
    """Reordered clauses: the natural unit of each task moved around, nothing reworded."""
    if name == "arithmetic":  # move the first sentence after the second
        head, body = prompt.split(": ", 1)
        sentences = re.split(r"(?<=[.?]) ", body.split("\n")[0])
        sentences[0], sentences[1] = sentences[1], sentences[0]
        return f"{head}: {' '.join(sentences)}\n" + "\n".join(body.split("\n")[1:])
    if name == "knowledge":  # facts in reverse order
        lines = prompt.split("\n")
        facts = lines[0].removeprefix("Facts: ").rstrip(".").split(". ")
        return "\n".join(["Facts: " + ". ".join(reversed(facts)) + ".", *lines[1:]])
    if name == "function_calling":  # request first, functions reversed
        lines = prompt.split("\n")
        functions = lines[0].removeprefix("Functions: ").split(" ")
        return "\n".join([lines[1], "Functions: " + " ".join(reversed(functions)), *lines[2:]])
    if name == "program_synthesis":  # examples in reverse order
        lines = prompt.split("\n")
        return "\n".join([lines[0], *reversed(lines[1:-1]), lines[-1]])
    raise ValueError(name)


def embed(name: str, text: str, seed: int) -> str:
    """`text` between two normal generated examples of the same task, as one row."""
    before, after = get_task(name).generator(next(iter(get_task(name).generators()))).generate(None, seed, 2)
    return f"{before['prompt']}{before['completion']}{text}\n\n{after['prompt']}{after['completion']}"
