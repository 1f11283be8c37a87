"""Plain-Python closures for *target* programs of `program_synthesis`.

Drawing one item runs hundreds of candidate programs (ambiguity and redundancy
checks). Target programs are trusted, finite and bounded, so they skip the
interpreter's parsing and budget bookkeeping; model output never comes here, it goes
through `_dsl.run`. `tests/tasks/test_dsl.py` checks both paths agree on every
canonical program.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._dsl import Program, Stage

__all__ = ["fast", "fast_stage"]


def fast_stage(stage: Stage) -> Callable[[Any], Any]:
    """A plain-Python closure for one *target* stage (trusted code, no budget needed)."""
    name = stage[0]
    if name == "map":
        op, k = stage[1], stage[2]
        return {
            "+": lambda v: [x + k for x in v],
            "-": lambda v: [x - k for x in v],
            "*": lambda v: [x * k for x in v],
        }[op]
    if name == "filter":
        kind, k = stage[1]
        test = {
            "even": lambda x: x % 2 == 0,
            "odd": lambda x: x % 2 == 1,
            ">": lambda x: x > k,
            "<": lambda x: x < k,
        }[kind]
        return lambda v: [x for x in v if test(x)]
    if name == "take":
        return lambda v: v[: stage[1]]
    if name == "drop":
        return lambda v: v[stage[1] :]
    simple: dict[str, Callable[[Any], Any]] = {
        "reverse": lambda v: v[::-1],
        "sort": sorted,
        "unique": lambda v: list(dict.fromkeys(v)),
        "len": len,
        "sum": sum,
        "max": lambda v: max(v) if v else None,
        "min": lambda v: min(v) if v else None,
    }
    return simple[name]


def fast(program: Program) -> Callable[[list[int]], Any]:
    """A closure computing a *target* program (None where the interpreter would fail).

    Ambiguity checks run hundreds of candidate programs per drawn item; the
    interpreter's budget bookkeeping is for untrusted model output, not for these.
    The tests check that this agrees with `run` on every canonical program.
    """
    stages = [fast_stage(stage) for stage in program]

    def call(value: list[int]) -> Any:
        out: Any = value
        for stage in stages:
            if out is None:
                return None
            out = stage(out)
        return out

    return call
