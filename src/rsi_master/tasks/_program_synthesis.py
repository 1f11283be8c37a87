"""`program_synthesis`: the HumanEval analogue.

The prompt shows input -> output examples of an unknown list program; the model's last
line must be a program in the list DSL (`_dsl.py`). The checker parses and *runs* it
in the restricted interpreter on the shown and hidden inputs: score 1 only when every
output matches. Two programs that behave the same are equally right.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from functools import partial
from types import MappingProxyType
from typing import Any

from ._base import FamilySpec, Problem, SuiteTask
from ._dsl import DslError, Program, Value, format_program, parse, run
from ._protocol import Decoding, Knob, Score, TaskHints
from ._ps_programs import STAGES, another_program_fits, describe, sample_program
from ._text import final_line

__all__ = ["ProgramSynthesisTask"]

N_HIDDEN = 5  # hidden test inputs per item, on top of the shown examples
MAX_TRIES = 30  # redraws of the inputs before a new program is drawn

PROBLEM_KNOBS = (
    Knob("min_depth", "int", 1, 1, 3, help="fewest stages in the target program"),
    Knob("max_depth", "int", 2, 1, 3, help="most stages in the target program"),
    Knob("n_examples", "int", 3, 2, 5, help="input -> output examples shown"),
    Knob("min_len", "int", 3, 1, 8, help="shortest input list"),
    Knob("max_len", "int", 6, 1, 8, help="longest input list"),
    Knob(
        "disambiguate",
        "choice",
        True,
        choices=(True, False),
        help="redraw examples that a different depth<=2 program also fits (slower, cleaner data)",
    ),
)


def _check_params(params: Mapping[str, Any]) -> None:
    for low, high in (("min_depth", "max_depth"), ("min_len", "max_len")):
        if params[low] > params[high]:
            raise ValueError(f"{low} ({params[low]}) must be <= {high} ({params[high]})")


def _show(value: Value) -> str:
    return str(value).replace(" ", "")


def _outputs(program: Program, inputs: list[list[int]]) -> list[Value] | None:
    try:
        return [run(program, x) for x in inputs]
    except DslError:
        return None


def _program_only(problem: Problem, params: Mapping[str, Any]) -> str:
    return " " + problem.reference["program"]


def _then_program(problem: Problem, lines: list[str]) -> str:
    """A completion: the family's observation lines, then the program on the last line."""
    return " " + "\n".join([*lines, problem.reference["program"]])


def _describe(problem: Problem, params: Mapping[str, Any]) -> str:
    return _then_program(problem, [describe(problem.data)])


def _stage_values(problem: Problem) -> list[tuple[str, str]]:
    """Each stage of the target with the first example's value after it."""
    value: Value = problem.reference["tests"][0][0]
    steps = []
    for stage in problem.data:
        # Only the last stage can be terminal (an int): every stage before it gets a list.
        value = run((stage,), value)  # type: ignore[arg-type]
        steps.append((format_program((stage,)), _show(value)))
    return steps


def _trace(problem: Problem, params: Mapping[str, Any]) -> str:
    return _then_program(problem, [" ".join(value for _, value in _stage_values(problem))])


def _steps(problem: Problem, params: Mapping[str, Any], *, last: bool = True) -> str:
    steps = _stage_values(problem)
    return _then_program(problem, [f"{stage} {value}" for stage, value in (steps if last else steps[:-1])])


def _outputs_first(problem: Problem, params: Mapping[str, Any]) -> str:
    shown = problem.reference["tests"][: params["n_examples"]]
    return _then_program(problem, [" ".join(_show(y) for _, y in shown)])


def _trace_all(problem: Problem, params: Mapping[str, Any]) -> str:
    shown = problem.reference["tests"][: params["n_examples"]]
    first = problem.data[:1]
    return _then_program(problem, [" ".join(_show(run(first, x)) for x, _ in shown)])


class ProgramSynthesisTask(SuiteTask):
    """Infer a list program from examples; checked by running it on hidden inputs."""

    name = "program_synthesis"
    capability = (
        "Given three input -> output examples of an integer-list transformation, write a program "
        "in the list DSL (e.g. 'map(+3) | filter(even) | reverse') that computes it on unseen inputs."
    )
    template = "Examples:\n{question}\nProgram:"
    # The longest eval-distribution completions (steps/outputs families) reach about 85 characters.
    decoding = Decoding(max_new_tokens=96)
    stop = ("\n\n",)
    hints = TaskHints(
        opening_order=("program_only", "trace_then_program", "describe_then_program"),
        contrast=("program_only", "trace_then_program"),
        reference="program_only",
    )
    eval_params = MappingProxyType(
        {"min_depth": 1, "max_depth": 2, "n_examples": 3, "min_len": 3, "max_len": 6, "disambiguate": True}
    )

    def _inputs(self, rng: random.Random, params: Mapping[str, Any], count: int) -> list[list[int]]:
        return [
            [rng.randint(0, 9) for _ in range(rng.randint(params["min_len"], params["max_len"]))] for _ in range(count)
        ]

    def sample(self, rng: random.Random, params: Mapping[str, Any]) -> Problem:
        while True:
            program = sample_program(rng, rng.randint(params["min_depth"], params["max_depth"]))
            for _ in range(MAX_TRIES):
                shown = self._inputs(rng, params, params["n_examples"])
                hidden = self._inputs(rng, params, N_HIDDEN)
                outputs = _outputs(program, shown + hidden)
                if outputs is None or sum(out == [] for out in outputs[: len(shown)]) > 1:
                    continue
                if len({tuple(x) for x in shown}) < len(shown):
                    continue
                if params["disambiguate"] and another_program_fits(
                    shown, outputs[: len(shown)], hidden, outputs[len(shown) :]
                ):
                    continue
                question = "\n".join(f"{_show(x)} -> {_show(y)}" for x, y in zip(shown, outputs, strict=False))
                tests = [[x, y] for x, y in zip(shown + hidden, outputs, strict=True)]
                return Problem(question, {"program": format_program(program), "tests": tests}, data=program)

    def families(self) -> tuple[FamilySpec, ...]:
        return (
            FamilySpec("program_only", "the program alone", PROBLEM_KNOBS, _program_only, _check_params),
            FamilySpec(
                "describe_then_program",
                "the stages in words ('add 3, then reverse'), then the program",
                PROBLEM_KNOBS,
                _describe,
                _check_params,
            ),
            FamilySpec(
                "trace_then_program",
                "the first example's value after each stage, then the program",
                PROBLEM_KNOBS,
                _trace,
                _check_params,
            ),
            FamilySpec(
                "steps_then_program",
                "each stage with the first example's value after it, one per line, then the program",
                PROBLEM_KNOBS,
                _steps,
                _check_params,
            ),
            FamilySpec(
                "outputs_then_program",
                "the shown outputs restated, then the program",
                PROBLEM_KNOBS,
                _outputs_first,
                _check_params,
            ),
            FamilySpec(
                "trace_all_then_program",
                "every shown input's value after the first stage, then the program",
                PROBLEM_KNOBS,
                _trace_all,
                _check_params,
            ),
            FamilySpec(
                "first_steps_then_program",
                "every stage but the last with the first example's value after it, then the program",
                PROBLEM_KNOBS,
                partial(_steps, last=False),
                _check_params,
            ),
        )

    def check(self, reference: Any, output: str) -> Score:
        line = final_line(output, self.stop)
        try:
            program = parse(line)
        except DslError as exc:
            return Score(0.0, f"does not parse: {exc}")
        for index, (given, expected) in enumerate(reference["tests"]):
            try:
                got = run(program, given)
            except DslError as exc:
                return Score(0.0, f"test {index}: {exc}")
            if got != expected or type(got) is not type(expected):
                return Score(0.0, f"test {index}: wrong output")
        return Score(1.0, f"passes {len(reference['tests'])} tests")

    def partial_credit(self, reference: Any, output: str) -> float:
        # 0.1 for a program that parses, up to 0.3 more for the share of tests passed.
        try:
            program = parse(final_line(output, self.stop))
        except DslError:
            return 0.0
        passed = 0
        for given, expected in reference["tests"]:
            try:
                got = run(program, given)
            except DslError:
                continue
            passed += got == expected and type(got) is type(expected)
        return 0.1 + 0.3 * passed / len(reference["tests"])

    def pretrain_lines(self, rng: random.Random) -> list[str]:
        # DSL expressions with their results in prose, never the examples/program format.
        stage = rng.choice(STAGES)
        program = (stage,) if stage[0] in {"sum", "max", "min", "len"} else (stage, rng.choice(STAGES))
        value = [rng.randint(0, 9) for _ in range(rng.randint(2, 6))]
        try:
            result = _show(run(program, value))
        except DslError:
            result = "an error"
        return [
            f"Applying {format_program(program)} to the list {_show(value)} gives {result}.",
            f"To {describe(program)} is written {format_program(program)}.",
        ]
