"""Target programs of `program_synthesis`: the stage inventory and how to sample one.

Programs are compositions of the 21 target stages below. A sampled composition is
rejected when it behaves like a shorter one on a fixed probe set (`sort | sort`,
`map(+1) | map(+2)`), so depth really means more work, and examples are redrawn until
no other program of depth <= 2 fits them while behaving differently on the hidden
tests (an ambiguous item would cap the score for reasons that are not the model's).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import cache
from typing import Any

from ._dsl import Program, Stage
from ._ps_fast import fast, fast_stage

Fingerprint = tuple[Any, ...]  # outputs on PROBES, lists as tuples (hashable)

__all__ = [
    "DESCRIPTIONS",
    "PROBES",
    "STAGES",
    "TERMINAL",
    "Fingerprint",
    "another_program_fits",
    "behaviour",
    "canonical_programs",
    "describe",
    "sample_program",
    "shorter_behaviours",
]

STAGES: tuple[Stage, ...] = (
    ("map", "+", 1),
    ("map", "+", 2),
    ("map", "+", 3),
    ("map", "-", 1),
    ("map", "*", 2),
    ("map", "*", 3),
    ("filter", ("even", 0)),
    ("filter", ("odd", 0)),
    ("filter", (">", 3)),
    ("filter", ("<", 5)),
    ("reverse",),
    ("sort",),
    ("unique",),
    ("take", 2),
    ("take", 3),
    ("drop", 1),
    ("drop", 2),
    ("sum",),
    ("max",),
    ("min",),
    ("len",),
)
TERMINAL = frozenset({"sum", "max", "min", "len"})
# A stage with an operator (map, filter) has a phrase per operator; the others, one phrase.
DESCRIPTIONS: dict[str, Any] = {
    "map": {"+": "add {k}", "-": "subtract {k}", "*": "times {k}"},
    "filter": {"even": "keep evens", "odd": "keep odds", ">": "keep >{k}", "<": "keep <{k}"},
    "take": "first {k}",
    "drop": "skip {k}",
    "reverse": "reverse",
    "sort": "sort",
    "unique": "dedupe",
    "sum": "sum",
    "max": "max",
    "min": "min",
    "len": "count",
}
# Fixed probe inputs: enough variety (odd/even, repeats, lengths 1-7) to tell stages apart.
_PROBE_RNG = random.Random(7)
PROBES: tuple[tuple[int, ...], ...] = tuple(
    tuple(_PROBE_RNG.randint(0, 9) for _ in range(_PROBE_RNG.randint(1, 7))) for _ in range(24)
)


def describe(program: Program) -> str:
    """Words for a program, one phrase per stage (`add 3, then reverse`)."""
    phrases = []
    for stage in program:
        entry = DESCRIPTIONS[stage[0]]
        if stage[0] == "map":
            phrases.append(entry[stage[1]].format(k=stage[2]))
        elif stage[0] == "filter":
            phrases.append(entry[stage[1][0]].format(k=stage[1][1]))
        elif stage[0] in ("take", "drop"):
            phrases.append(entry.format(k=stage[1]))
        else:
            phrases.append(entry)
    return ", then ".join(phrases)


def behaviour(program: Program) -> Fingerprint:
    """Outputs of a target program on the probe inputs (None where it fails): a fingerprint."""
    call = fast(program)
    out: list[Any] = []
    for probe in PROBES:
        value = call(list(probe))
        out.append(tuple(value) if isinstance(value, list) else value)
    return tuple(out)


def _compositions(depth: int) -> list[Program]:
    if depth == 1:
        return [(stage,) for stage in STAGES]
    return [
        (*prefix, stage) for prefix in _compositions(depth - 1) if prefix[-1][0] not in TERMINAL for stage in STAGES
    ]


@cache
def shorter_behaviours(depth: int) -> frozenset[Fingerprint]:
    """Fingerprints of the identity and of every composition shorter than `depth`."""
    found = {behaviour(())}
    for d in range(1, depth):
        found |= {behaviour(p) for p in _compositions(d)}
    return frozenset(found)


@cache
def _canonical_tree() -> tuple[tuple[Callable[[Any], Any], tuple[Callable[[Any], Any] | None, ...]], ...]:
    """Canonical depth<=2 programs grouped by first stage (None: the stage alone)."""
    groups: dict[Stage, list[Stage | None]] = {}
    for program in canonical_programs(2):
        groups.setdefault(program[0], []).append(program[1] if len(program) > 1 else None)
    return tuple(
        (fast_stage(first), tuple(None if second is None else fast_stage(second) for second in seconds))
        for first, seconds in groups.items()
    )


def _apply(stage: Callable[[Any], Any] | None, value: Any) -> Any:
    return value if stage is None or value is None else stage(value)


def another_program_fits(
    shown: list[list[int]], want_shown: list[Any], hidden: list[list[int]], want_hidden: list[Any]
) -> bool:
    """True when a canonical depth<=2 program reproduces the shown outputs but not the hidden ones.

    Walks the programs as a tree (first stage computed once per group) and tests the
    first example before the others: most candidates fail there, and this check runs
    for every drawn item.
    """
    x0, y0 = shown[0], want_shown[0]
    for first, seconds in _canonical_tree():
        head = first(x0)
        heads = None
        for second in seconds:
            if _apply(second, head) != y0:
                continue
            if heads is None:
                heads = [first(x) for x in shown[1:]]
            if any(_apply(second, h) != y for h, y in zip(heads, want_shown[1:], strict=True)):
                continue
            if [_apply(second, first(x)) for x in hidden] != want_hidden:
                return True
    return False


@cache
def canonical_programs(max_depth: int) -> tuple[Program, ...]:
    """One program per distinct behaviour among compositions of depth <= max_depth."""
    seen: dict[Fingerprint, Program] = {}
    for d in range(1, max_depth + 1):
        for program in _compositions(d):
            seen.setdefault(behaviour(program), program)
    return tuple(seen.values())


def sample_program(rng: random.Random, depth: int) -> Program:
    """A composition of `depth` target stages that no shorter composition imitates."""
    shorter = shorter_behaviours(depth)
    while True:
        stages = [rng.choice(STAGES) for _ in range(depth)]
        if any(stage[0] in TERMINAL for stage in stages[:-1]):
            continue
        program = tuple(stages)
        fingerprint = behaviour(program)
        # Mostly-failing programs (e.g. `filter(<5) | filter(>3) | max` on empty lists) teach nothing.
        if fingerprint not in shorter and sum(v is None or v == () for v in fingerprint) <= len(PROBES) // 4:
            return program
