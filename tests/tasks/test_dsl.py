"""The list DSL: parser, interpreter limits, and agreement with the fast target path."""

from __future__ import annotations

import time

import pytest

from rsi_master.tasks._dsl import MAX_PROGRAM_CHARS, DslError, format_program, parse, run
from rsi_master.tasks._ps_fast import fast
from rsi_master.tasks._ps_programs import PROBES, canonical_programs, describe


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ("map(+3) | filter(even) | reverse", [1, 2, 3, 4], [6, 4]),
        ("map(*2)|sum", [1, 2, 3], 12),
        ("  sort | unique | take(2) ", [3, 1, 3, 2], [1, 2]),
        ("filter(>3) | len", [1, 5, 9], 2),
        ("drop(1) | map(-1)", [5, 5, 5], [4, 4]),
        ("filter(<5) | min", [7, 2, 3], 2),
        ("repeat(3, map(+1))", [0], [3]),
        ("until(>9, map(*2))", [1, 3], [16, 48]),
        ("filter(>50) | sum", [1, 2], 0),
        ("filter(odd) | max", [2, 7, 5], 7),
    ],
)
def test_programs_run(text, value, expected):
    assert run(parse(text), value) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty program"),
        ("map(+3", r"expected \)"),
        ("map(/3)", "unexpected character"),
        ("map(+100)", "0..99"),
        ("explode", "unknown stage"),
        ("filter(prime)", "unknown predicate"),
        ("reverse reverse", "unexpected reverse"),
        ("x" * (MAX_PROGRAM_CHARS + 1), "longer than"),
        ("repeat(2," * 8 + "sort" + ")" * 8, "nesting too deep"),
        ("__import__('os')", "unexpected character"),
        ("sort | ", "expected a token"),
    ],
)
def test_parse_errors(text, message):
    with pytest.raises(DslError, match=message):
        parse(text)


@pytest.mark.parametrize(
    ("text", "value", "message"),
    [
        ("until(<0, sort)", [1], "limit"),  # never terminates on its own
        ("until(>99, map(-1))", [5], "limit"),
        ("repeat(99, repeat(99, repeat(99, map(+1))))", [1, 2, 3], "limit"),
        ("repeat(40, map(*9))", [5], "value out of range"),
        ("sum | reverse", [1, 2], "needs a list"),
        ("filter(>50) | max", [1, 2], "empty list"),
        ("filter(>50) | min", [1, 2], "empty list"),
    ],
)
def test_runtime_limits_and_errors(text, value, message):
    start = time.monotonic()
    with pytest.raises(DslError, match=message):
        run(parse(text), value)
    assert time.monotonic() - start < 0.5


def test_canonical_programs_round_trip_and_fast_path_agrees_with_interpreter():
    programs = canonical_programs(2)
    assert len(programs) > 200
    for program in programs:
        assert parse(format_program(program)) == program
        assert describe(program)
        quick = fast(program)
        for probe in PROBES:
            try:
                expected = run(program, list(probe))
            except DslError:
                expected = None
            assert quick(list(probe)) == expected, format_program(program)


def test_run_does_not_mutate_its_input():
    value = [3, 1, 2]
    run(parse("sort | reverse"), value)
    assert value == [3, 1, 2]
