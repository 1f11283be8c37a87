"""`function_calling`: the BFCL analogue.

The prompt lists a few function signatures and a request in words; the model's last
line must be one JSON object `{"name": ..., "arguments": {...}}`. The checker parses
it and compares the name and every argument by JSON type (an int is not a string, a
bool is not an int), never by string equality of the whole output.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ._base import FamilySpec, Problem, SuiteTask
from ._fc_catalog import CATALOG, CITIES, DAYS, PEOPLE, ROOMS
from ._protocol import Decoding, Knob, Score, TaskHints
from ._text import final_line

__all__ = ["FunctionCallingTask"]

MAX_JSON_CHARS = 1_000  # a correct call is under 100 characters
MAX_BRACKETS = 32  # refuse pathological nesting before json.loads recurses into it

PROBLEM_KNOBS = (
    Knob("n_shown", "int", 3, 1, 6, help="functions listed in the prompt, the target included"),
    Knob("n_functions", "int", len(CATALOG), 2, len(CATALOG), help="catalogue functions used as targets"),
    Knob("max_arity", "int", 3, 1, 3, help="most arguments of a target function"),
    Knob("phrasings", "int", 3, 1, 3, help="request phrasings per function (diversity)"),
)


def _targets(params: Mapping[str, Any]) -> list[int]:
    return [i for i, f in enumerate(CATALOG[: params["n_functions"]]) if len(f.params) <= params["max_arity"]]


def _check_params(params: Mapping[str, Any]) -> None:
    if not _targets(params):
        raise ValueError(
            f"no function with at most {params['max_arity']} arguments among the first {params['n_functions']}"
        )


def _call(problem: Problem, ordered: bool) -> dict[str, Any]:
    args = problem.reference["arguments"]
    return {"name": problem.reference["name"], "arguments": args if ordered else dict(sorted(args.items()))}


def _compact(problem: Problem, params: Mapping[str, Any]) -> str:
    return " " + json.dumps(_call(problem, True), separators=(",", ":"))


def _verbose(problem: Problem, params: Mapping[str, Any]) -> str:
    return " " + json.dumps(_call(problem, False))


def _plan(problem: Problem, params: Mapping[str, Any]) -> str:
    ref = problem.reference
    values = " ".join(f"{k}={json.dumps(v)}" for k, v in ref["arguments"].items())
    return f" {ref['name']}: {values}\n" + json.dumps(_call(problem, True), separators=(",", ":"))


def _same(kind: str, got: Any, want: Any) -> bool:
    """Type-aware equality of one argument value."""
    if kind == "bool":
        return isinstance(got, bool) and got == want
    if kind == "int":
        return isinstance(got, int) and not isinstance(got, bool) and got == want
    if kind == "float":
        return (
            isinstance(got, (int, float))
            and not isinstance(got, bool)
            and math.isfinite(got)
            and abs(got - want) < 1e-6
        )
    return isinstance(got, str) and got.strip().casefold() == str(want).casefold()


class FunctionCallingTask(SuiteTask):
    """Pick the right function from a list and fill its arguments from the request."""

    name = "function_calling"
    capability = (
        "Given a request and a list of function signatures, emit exactly one JSON call "
        '{"name": ..., "arguments": {...}} naming the right function with correctly typed arguments.'
    )
    template = "Functions: {question}\nCall:"
    # Longest eval-distribution completion (plan family, 3 arguments) is 134
    # characters with the stop string; tests/tasks check every family fits.
    decoding = Decoding(max_new_tokens=144)
    stop = ("\n\n",)
    # A run that names no budget gets ten minutes, not five: the task's learning curves stay
    # near zero until copying argument values forms, after one to two default experiments,
    # which a 5-minute campaign's best lineage does not reach (docs/tasks.md, "What function
    # calling waits for is copying").
    hints = TaskHints(
        opening_order=("compact", "verbose", "plan_then_call"),
        contrast=("compact", "plan_then_call"),
        reference="compact",
        budget_s=600.0,
    )
    eval_params = MappingProxyType({"n_shown": 3, "n_functions": len(CATALOG), "max_arity": 3, "phrasings": 3})

    def sample(self, rng: random.Random, params: Mapping[str, Any]) -> Problem:
        target = CATALOG[rng.choice(_targets(params))]
        others = [f for f in CATALOG if f is not target]
        shown = [target, *rng.sample(others, params["n_shown"] - 1)]
        rng.shuffle(shown)
        args = {p.name: p.draw(rng) for p in target.params}
        request = target.render(rng, args, params["phrasings"])
        question = " ".join(f.signature() for f in shown) + f"\nRequest: {request}"
        reference = {"name": target.name, "arguments": args, "types": {p.name: p.type for p in target.params}}
        return Problem(question, reference, keys=(request,))

    def families(self) -> tuple[FamilySpec, ...]:
        return (
            FamilySpec("compact", "compact JSON, arguments in signature order", PROBLEM_KNOBS, _compact, _check_params),
            FamilySpec("verbose", "spaced JSON, arguments sorted by name", PROBLEM_KNOBS, _verbose, _check_params),
            FamilySpec(
                "plan_then_call",
                "a line naming the function and values, then the compact JSON call",
                PROBLEM_KNOBS,
                _plan,
                _check_params,
            ),
        )

    def _parse(self, output: str) -> Any:
        """The last line as JSON, or a reason string when it is not usable."""
        line = final_line(output, self.stop)
        if not line.startswith("{"):
            return Score(0.0, "last line is not a JSON object")
        if len(line) > MAX_JSON_CHARS or line.count("{") + line.count("[") > MAX_BRACKETS:
            return Score(0.0, "JSON too long or too deeply nested")
        try:
            return json.loads(line)
        except (ValueError, RecursionError) as exc:
            return Score(0.0, f"malformed JSON: {str(exc)[:80]}")

    def partial_credit(self, reference: Any, output: str) -> float:
        # 0.1 for a call-shaped object, 0.2 for the right function, then up to 0.2
        # for the share of arguments that are right.
        call = self._parse(output)
        if not isinstance(call, dict) or set(call) != {"name", "arguments"}:
            return 0.0
        if call["name"] != reference["name"] or not isinstance(call["arguments"], dict):
            return 0.1
        types = reference["types"]
        right = sum(
            key in call["arguments"] and _same(kind, call["arguments"][key], reference["arguments"][key])
            for key, kind in types.items()
        )
        return 0.2 + 0.2 * right / max(1, len(types))

    def check(self, reference: Any, output: str) -> Score:
        call = self._parse(output)
        if isinstance(call, Score):
            return call
        if not isinstance(call, dict) or set(call) != {"name", "arguments"}:
            return Score(0.0, "call must be an object with exactly 'name' and 'arguments'")
        if call["name"] != reference["name"]:
            return Score(0.0, f"wrong function {str(call['name'])[:40]!r}")
        args = call["arguments"]
        if not isinstance(args, dict):
            return Score(0.0, "'arguments' is not an object")
        want = reference["arguments"]
        if set(args) != set(want):
            missing, extra = sorted(set(want) - set(args)), sorted(set(args) - set(want))
            return Score(0.0, f"argument names differ: missing {missing[:5]}, unexpected {[k[:20] for k in extra[:5]]}")
        for key, kind in reference["types"].items():
            if not _same(kind, args[key], want[key]):
                return Score(0.0, f"argument {key!r}: expected {kind} {want[key]!r}")
        return Score(1.0, "correct")

    def pretrain_lines(self, rng: random.Random) -> list[str]:
        # JSON records and prose about the same functions, never a name/arguments call.
        city, day, room = rng.choice(CITIES), rng.choice(DAYS), rng.choice(ROOMS)
        record = {"city": city, "day": day, "high": rng.randint(-5, 35), "rain": rng.random() < 0.5}
        function = rng.choice(CATALOG)
        params = ", ".join(f"{p.name} ({p.type})" for p in function.params)
        return [
            json.dumps(record),
            json.dumps({"room": room, "temp": rng.randint(15, 30), "owner": rng.choice(PEOPLE)}, separators=(",", ":")),
            f"The function {function.name} takes {params}.",
            rng.choice((f"{rng.choice(PEOPLE)} asked about the weather in {city}.", f"It rained in {city} on {day}.")),
        ]
