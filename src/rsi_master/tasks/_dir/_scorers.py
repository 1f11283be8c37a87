"""The built-in scorers of task directories, and the user's own Python scorer.

A scorer turns an item's fields into a reference (what the checker needs; never shown to an
agent) and extra template fields (the lettered choices of a multiple-choice item), and checks
an output against a reference. `score` is total: a checker that raises gives 0 with the reason.
"""

from __future__ import annotations

import json
import math
import random
import re
import string
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from .._protocol import Score
from .._text import MAX_OUTPUT_CHARS
from ._config import (
    ChoiceScorer,
    ExactScorer,
    FunctionCallScorer,
    NumericScorer,
    PythonScorer,
    RegexScorer,
    UnitTestScorer,
)
from ._sandbox import CallCase, run_unit_tests

__all__ = ["Scorer", "make_scorer", "normalise_answer"]

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+")
_LETTERS = string.ascii_uppercase
_EDGE_PUNCT = " \t\n\"'`.,;:!?()[]{}*"


def normalise_answer(text: str, case_sensitive: bool = False) -> str:
    """NFKC, white space collapsed, surrounding quotes/punctuation dropped, case folded."""
    text = " ".join(unicodedata.normalize("NFKC", text).split()).strip(_EDGE_PUNCT)
    return text if case_sensitive else text.casefold()


def _last_number(text: str) -> float | None:
    found = _NUMBER.findall(text.replace("$", ""))
    if not found:
        return None
    try:
        value = float(found[-1].replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _field(fields: Mapping[str, Any], name: str) -> Any:
    if name not in fields:
        raise ValueError(f"has no field {name!r} (the scorer needs it)")
    return fields[name]


class Scorer:
    """Base: a reference per item, a checker, and the total `score`."""

    kind: str = ""

    def prepare(self, item_id: str, fields: Mapping[str, Any]) -> tuple[dict[str, str], Any]:
        """(extra template fields, reference) of one item; ValueError when a field is missing."""
        raise NotImplementedError

    def check(self, reference: Any, output: str) -> Score:
        raise NotImplementedError

    def score(self, item: Any, output: str) -> Score:
        """Score `output` for an EvalItem or PoolItem (anything with `reference`); never raises."""
        return self.score_reference(item.reference, output)

    def score_reference(self, reference: Any, output: Any) -> Score:
        if not isinstance(output, str):
            return Score(0.0, f"output is {type(output).__name__}, not str")
        try:
            result = self.check(reference, output[:MAX_OUTPUT_CHARS])
            value = float(result.score)
        except Exception as exc:  # one bad item scores 0 with the reason; the run goes on
            return Score(0.0, f"scorer error: {type(exc).__name__}: {str(exc)[:200]}")
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            return Score(0.0, f"scorer returned {value!r}, outside [0, 1]")
        return Score(value, result.reason)


class _Exact(Scorer):
    kind = "exact_match"

    def __init__(self, config: ExactScorer | RegexScorer) -> None:
        self.config = config

    def prepare(self, item_id: str, fields: Mapping[str, Any]) -> tuple[dict[str, str], Any]:
        answer = _field(fields, self.config.answer_field)
        answers = answer if isinstance(answer, list) else [answer]
        if not answers or not all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in answers):
            raise ValueError(f"field {self.config.answer_field!r} must be text, a number, or a list of them")
        return {}, [str(a) for a in answers]

    def _equal(self, got: str, answers: list[str]) -> Score:
        want = {normalise_answer(a, self.config.case_sensitive) for a in answers}
        norm = normalise_answer(got, self.config.case_sensitive)
        return Score(1.0, "match") if norm in want else Score(0.0, f"got {norm[:80]!r}")

    def check(self, reference: Any, output: str) -> Score:
        return self._equal(output, list(reference))


class _Regex(_Exact):
    kind = "regex"

    def __init__(self, config: RegexScorer) -> None:
        super().__init__(config)
        flags = 0 if config.case_sensitive else re.IGNORECASE
        self.pattern = re.compile(config.pattern, flags)

    def check(self, reference: Any, output: str) -> Score:
        matches = list(self.pattern.finditer(output))
        if not matches:
            return Score(0.0, "pattern not found")
        last = matches[-1]
        return self._equal(last.group(1) if self.pattern.groups else last.group(0), list(reference))


class _Numeric(Scorer):
    kind = "numeric"

    def __init__(self, config: NumericScorer) -> None:
        self.config = config

    def prepare(self, item_id: str, fields: Mapping[str, Any]) -> tuple[dict[str, str], Any]:
        answer = _field(fields, self.config.answer_field)
        value = answer if isinstance(answer, (int, float)) and not isinstance(answer, bool) else None
        if isinstance(answer, str):
            value = _last_number(answer.rpartition("####")[2] or answer)
        if value is None or not math.isfinite(float(value)):
            raise ValueError(f"field {self.config.answer_field!r} holds no number")
        return {}, float(value)

    def check(self, reference: Any, output: str) -> Score:
        got = _last_number(output)
        if got is None:
            return Score(0.0, "no number in the output")
        ok = abs(got - float(reference)) <= self.config.tolerance
        return Score(1.0, "match") if ok else Score(0.0, f"got {got:g}, want {float(reference):g}")


class _Choice(Scorer):
    kind = "multiple_choice"

    def __init__(self, config: ChoiceScorer) -> None:
        self.config = config

    def prepare(self, item_id: str, fields: Mapping[str, Any]) -> tuple[dict[str, str], Any]:
        choices = _field(fields, self.config.choices_field)
        if not isinstance(choices, list) or not 2 <= len(choices) <= len(_LETTERS):
            raise ValueError(f"field {self.config.choices_field!r} must be a list of 2-26 choices")
        choices = [str(c) for c in choices]
        answer = _field(fields, self.config.answer_field)
        if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(choices):
            right = answer
        elif isinstance(answer, str) and choices.count(answer) == 1:
            right = choices.index(answer)
        else:
            raise ValueError(f"field {self.config.answer_field!r} must be an index into the choices or one choice")
        order = list(range(len(choices)))
        if self.config.shuffle_seed is not None:
            # Seeded by the item's id: the order is fixed by the task, never by the run.
            random.Random(f"{self.config.shuffle_seed}\x1f{item_id}").shuffle(order)
        lines = "\n".join(f"{_LETTERS[i]}. {choices[j]}" for i, j in enumerate(order))
        return {"choices": lines}, {"letter": _LETTERS[order.index(right)], "n": len(choices)}

    def check(self, reference: Any, output: str) -> Score:
        letters = _LETTERS[: int(reference["n"])]
        said = re.findall(rf"answer\s*(?:is)?\s*:?\s*\(?([{letters}])\b", output, re.IGNORECASE)
        head = re.match(rf"\s*\(?([{letters}])\b", output)
        got = said[-1].upper() if said else (head.group(1) if head else None)
        if got is None:
            return Score(0.0, "no choice letter in the output")
        return Score(1.0, "match") if got == reference["letter"] else Score(0.0, f"chose {got}")


class _FunctionCall(Scorer):
    kind = "function_call"

    def __init__(self, config: FunctionCallScorer) -> None:
        self.config = config

    @staticmethod
    def _call(value: Any) -> dict[str, Any]:
        if isinstance(value, str):
            value = json.loads(value)
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            raise ValueError('a call is {"name": str, "arguments": {...}}')
        args = value.get("arguments", {})
        if isinstance(args, str):  # OpenAI-style calls carry arguments as a JSON string
            args = json.loads(args)
        if not isinstance(args, dict):
            raise ValueError("a call's arguments must be an object")
        return {"name": value["name"], "arguments": args}

    def prepare(self, item_id: str, fields: Mapping[str, Any]) -> tuple[dict[str, str], Any]:
        answer = _field(fields, self.config.answer_field)
        calls = answer if isinstance(answer, list) else [answer]
        return {}, [self._call(c) for c in calls]

    def check(self, reference: Any, output: str) -> Score:
        start = output.find("{")
        if start < 0:
            return Score(0.0, "no JSON object in the output")
        try:
            parsed, _ = json.JSONDecoder().raw_decode(output[start:])
            got = self._call(parsed)
        except ValueError as exc:
            return Score(0.0, f"not a call: {str(exc)[:80]}")
        # Compared as parsed JSON: key order and 1 vs 1.0 do not matter, types otherwise do.
        if any(got == want for want in reference):
            return Score(1.0, "match")
        return Score(
            0.0,
            f"called {got['name']} with other arguments"
            if got["name"] == reference[0]["name"]
            else f"called {got['name']}",
        )


class _UnitTests(Scorer):
    kind = "unit_tests"

    def __init__(self, config: UnitTestScorer) -> None:
        self.config = config

    def prepare(self, item_id: str, fields: Mapping[str, Any]) -> tuple[dict[str, str], Any]:
        tests = _field(fields, self.config.tests_field)
        if isinstance(tests, list) and tests and all(isinstance(t, dict) for t in tests):
            tests = [_call_case(t) for t in tests]
        elif isinstance(tests, list) and all(isinstance(t, str) for t in tests):
            tests = "\n".join(tests)
        if (isinstance(tests, str) and not tests.strip()) or not isinstance(tests, (str, list)):
            raise ValueError(
                f"field {self.config.tests_field!r} must be Python code, a list of lines, or a list of "
                '{"call", "args", "expected"} cases'
            )
        prefix = ""
        if self.config.prefix_field is not None:
            prefix = _field(fields, self.config.prefix_field)
            if not isinstance(prefix, str):
                raise ValueError(f"field {self.config.prefix_field!r} must be text")
        return {}, {"tests": tests, "prefix": prefix}

    def check(self, reference: Any, output: str) -> Score:
        program = reference["prefix"] + output
        tests = reference["tests"]
        if not isinstance(tests, str):
            tests = [CallCase(c["call"], tuple(c["args"]), c["kwargs"], c["expected"], c["tolerance"]) for c in tests]
        return run_unit_tests(program, tests, self.config.timeout_s, self.config.memory_mb)


_CASE_KEYS = frozenset({"call", "args", "kwargs", "expected", "tolerance"})


def _call_case(case: dict[str, Any]) -> dict[str, Any]:
    """A call case checked and completed: `call` a name, `args` a list, `kwargs` an object,
    `expected` any JSON value, `tolerance` a number (for floats; default 0)."""
    extra = set(case) - _CASE_KEYS
    args, kwargs, tolerance = case.get("args", []), case.get("kwargs", {}), case.get("tolerance", 0.0)
    if extra or not isinstance(case.get("call"), str) or not case["call"].isidentifier() or "expected" not in case:
        raise ValueError(f'a call case is {{"call": name, "args": [...], "expected": value}}, got keys {sorted(case)}')
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise ValueError("a call case's args must be a list and its kwargs an object")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < math.inf:
        raise ValueError("a call case's tolerance must be a number >= 0")
    return {
        "call": case["call"],
        "args": args,
        "kwargs": kwargs,
        "expected": case["expected"],
        "tolerance": float(tolerance),
    }


class _Python(Scorer):
    kind = "python"

    def __init__(self, config: PythonScorer, function: Callable[..., Any]) -> None:
        self.config = config
        self.function = function

    def prepare(self, item_id: str, fields: Mapping[str, Any]) -> tuple[dict[str, str], Any]:
        return {}, {"id": item_id, **fields}

    def check(self, reference: Any, output: str) -> Score:
        result = self.function(dict(reference), output)
        if isinstance(result, tuple) and len(result) == 2:
            return Score(float(result[0]), str(result[1]))
        if hasattr(result, "score"):
            return Score(float(result.score), str(getattr(result, "reason", "")))
        return Score(float(result), "")


def load_python_scorer(config: PythonScorer, source: bytes, label: str) -> Callable[..., Any]:
    """The scorer function compiled from `source`: the bytes that were read and digested, never a
    second read of the file (which could have changed in between)."""
    namespace: dict[str, Any] = {"__name__": f"rsi_task_scorer_{config.function}", "__file__": label}
    exec(compile(source, label, "exec"), namespace)  # the task's own scorer: trusted as the task is
    function = namespace.get(config.function)
    if not callable(function):
        raise ValueError(f"{label} defines no function {config.function!r}")
    return function


def make_scorer(config: Any, python_source: bytes | None = None, label: str = "scorer.py") -> Scorer:
    """The scorer a `task.toml` [scorer] table describes."""
    if isinstance(config, PythonScorer):
        assert python_source is not None
        return _Python(config, load_python_scorer(config, python_source, label))
    kinds: dict[type, Callable[[Any], Scorer]] = {
        ExactScorer: _Exact,
        NumericScorer: _Numeric,
        RegexScorer: _Regex,
        ChoiceScorer: _Choice,
        UnitTestScorer: _UnitTests,
        FunctionCallScorer: _FunctionCall,
    }
    return kinds[type(config)](config)
