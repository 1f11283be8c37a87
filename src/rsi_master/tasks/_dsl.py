"""The list DSL of `program_synthesis`: parser and restricted interpreter.

Model output is never handed to Python's `eval`/`exec`. It is parsed by a small
recursive-descent parser into stage tuples and run by an interpreter that counts
steps and checks a wall-clock deadline, bounds list lengths and value magnitudes,
and touches no files. `repeat` and `until` exist so that the language can loop (and
the limits are exercised); the target programs never use them.

Grammar (whitespace is free)::

    program := stage ("|" stage)*
    stage   := "reverse" | "sort" | "unique" | "sum" | "max" | "min" | "len"
             | "map(" ("+" | "-" | "*") INT ")" | "filter(" pred ")"
             | "take(" INT ")" | "drop(" INT ")"
             | "repeat(" INT "," program ")" | "until(" pred "," program ")"
    pred    := "even" | "odd" | ">" INT | "<" INT
"""

from __future__ import annotations

import re
import time
from typing import Any

__all__ = ["MAX_PROGRAM_CHARS", "DslError", "Program", "format_program", "parse", "run"]

MAX_PROGRAM_CHARS = 300
MAX_DEPTH = 6  # nesting of repeat/until
MAX_INT = 99  # literals in programs
MAX_VALUE = 10**9  # any value computed
MAX_LEN = 1_000  # any list computed
MAX_STEPS = 20_000  # element operations per run
MAX_SECONDS = 1.0  # wall-clock backstop only: the step limit is what normally stops a run, deterministically

Value = int | list[int]
Stage = tuple[Any, ...]
Program = tuple[Stage, ...]

_TOKEN = re.compile(r"\s*(?:([a-z]+)|(\d+)|([|(),+\-*<>]))")
_SIMPLE = {"reverse", "sort", "unique", "sum", "max", "min", "len"}
_CALLS = {"map", "filter", "take", "drop", "repeat", "until"}
_PREDS = {"even", "odd"}


class DslError(ValueError):
    """A program that does not parse or fails at run time (the reason is the message)."""


def _tokens(text: str) -> list[str]:
    if len(text) > MAX_PROGRAM_CHARS:
        raise DslError(f"program longer than {MAX_PROGRAM_CHARS} characters")
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise DslError(f"unexpected character {text[pos]!r} at {pos}")
        tokens.append(next(group for group in match.groups() if group is not None))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.pos = tokens, 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise DslError(f"expected {expected or 'a token'}, got {token or 'end of program'}")
        self.pos += 1
        return token

    def integer(self) -> int:
        token = self.take()
        if not token.isdigit() or int(token) > MAX_INT:
            raise DslError(f"expected an integer 0..{MAX_INT}, got {token}")
        return int(token)

    def pred(self) -> tuple[str, int]:
        token = self.take()
        if token in _PREDS:
            return (token, 0)
        if token in ("<", ">"):
            return (token, self.integer())
        raise DslError(f"unknown predicate {token}")

    def program(self, depth: int) -> Program:
        if depth > MAX_DEPTH:
            raise DslError("nesting too deep")
        stages = [self.stage(depth)]
        while self.peek() == "|":
            self.take("|")
            stages.append(self.stage(depth))
        return tuple(stages)

    def stage(self, depth: int) -> Stage:
        name = self.take()
        if name in _SIMPLE:
            return (name,)
        if name not in _CALLS:
            raise DslError(f"unknown stage {name}")
        self.take("(")
        if name == "map":
            op = self.take()
            if op not in "+-*" or len(op) != 1:
                raise DslError(f"map needs +, - or *, got {op}")
            stage: Stage = ("map", op, self.integer())
        elif name == "filter":
            stage = ("filter", self.pred())
        elif name in ("take", "drop"):
            stage = (name, self.integer())
        elif name == "repeat":
            count = self.integer()
            self.take(",")
            stage = ("repeat", count, self.program(depth + 1))
        else:
            pred = self.pred()
            self.take(",")
            stage = ("until", pred, self.program(depth + 1))
        self.take(")")
        return stage


def parse(text: str) -> Program:
    """Parse program text; DslError on anything outside the grammar."""
    parser = _Parser(_tokens(text))
    if parser.peek() is None:
        raise DslError("empty program")
    program = parser.program(0)
    if parser.peek() is not None:
        raise DslError(f"unexpected {parser.peek()} after the program")
    return program


def format_program(program: Program) -> str:
    """Canonical text of a program (the form training completions use)."""

    def pred(p: tuple[str, int]) -> str:
        return p[0] if p[0] in _PREDS else f"{p[0]}{p[1]}"

    def stage(s: Stage) -> str:
        if len(s) == 1:
            return s[0]
        if s[0] == "map":
            return f"map({s[1]}{s[2]})"
        if s[0] == "filter":
            return f"filter({pred(s[1])})"
        if s[0] in ("take", "drop"):
            return f"{s[0]}({s[1]})"
        if s[0] == "repeat":
            return f"repeat({s[1]},{format_program(s[2])})"
        return f"until({pred(s[1])},{format_program(s[2])})"

    return " | ".join(stage(s) for s in program)


class _Budget:
    def __init__(self) -> None:
        self.steps = 0
        self.deadline = time.monotonic() + MAX_SECONDS

    def spend(self, cost: int) -> None:
        self.steps += cost + 1
        if self.steps > MAX_STEPS:
            raise DslError(f"step limit {MAX_STEPS} exceeded")
        if time.monotonic() > self.deadline:
            raise DslError(f"time limit {MAX_SECONDS}s exceeded")


def _holds(pred: tuple[str, int], x: int) -> bool:
    kind, k = pred
    if kind == "even":
        return x % 2 == 0
    if kind == "odd":
        return x % 2 == 1
    return x > k if kind == ">" else x < k


def _stage(stage: Stage, value: Value, budget: _Budget) -> Value:
    if not isinstance(value, list):
        raise DslError(f"{stage[0]} needs a list, got a number")
    budget.spend(len(value))
    name = stage[0]
    if name == "map":
        op, k = stage[1], stage[2]
        out = [x + k if op == "+" else x - k if op == "-" else x * k for x in value]
        if any(abs(x) > MAX_VALUE for x in out):
            raise DslError("value out of range")
        return out
    if name == "filter":
        return [x for x in value if _holds(stage[1], x)]
    if name == "take":
        return value[: stage[1]]
    if name == "drop":
        return value[stage[1] :]
    if name == "reverse":
        return value[::-1]
    if name == "sort":
        return sorted(value)
    if name == "unique":
        return list(dict.fromkeys(value))
    if name == "repeat":
        for _ in range(stage[1]):
            value = _run(stage[2], value, budget)
        return value
    if name == "until":
        while not all(_holds(stage[1], x) for x in value):
            budget.spend(len(value))
            value = _run(stage[2], value, budget)
            if not isinstance(value, list):
                raise DslError("until body must return a list")
        return value
    if name in ("len", "sum"):
        return len(value) if name == "len" else sum(value)
    if not value:
        raise DslError(f"{name} of an empty list")
    return max(value) if name == "max" else min(value)


def _run(program: Program, value: Value, budget: _Budget) -> Value:
    for stage in program:
        value = _stage(stage, value, budget)
        if isinstance(value, list) and len(value) > MAX_LEN:
            raise DslError("list too long")
    return value


def run(program: Program, value: list[int]) -> Value:
    """Run a parsed program on one input list within the step and time limits."""
    return _run(program, list(value), _Budget())
