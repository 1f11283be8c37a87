"""`arithmetic`: the GSM8K analogue.

Short word problems over two or three numbers with addition and subtraction. The
model must end with `#### <answer>` on its last line; the checker compares the
integer after the marker exactly. The families differ in structure (answer only,
restated equation, reversed digit-by-digit scratchpad), not only in size.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ._arithmetic_text import QUESTIONS, apply, phrase, scratchpad_line
from ._base import FamilySpec, Problem, SuiteTask
from ._protocol import Decoding, Knob, Score, TaskHints
from ._text import final_line

__all__ = ["ArithmeticTask"]

MARKER = "####"
_ANSWER = re.compile(r"-?\d{1,30}")

PROBLEM_KNOBS = (
    Knob("min_digits", "int", 2, 1, 4, help="fewest digits in an operand"),
    Knob("max_digits", "int", 2, 1, 4, help="most digits in an operand"),
    Knob("operands", "int", 2, 2, 3, help="numbers in the problem (2 or 3)"),
    Knob("ops", "choice", "mixed", choices=("add", "sub", "mixed"), help="operators used"),
    Knob("templates", "int", len(QUESTIONS), 1, len(QUESTIONS), help="phrasings per sentence slot (diversity)"),
)


def _check_digits(params: Mapping[str, Any]) -> None:
    if params["min_digits"] > params["max_digits"]:
        raise ValueError(f"min_digits ({params['min_digits']}) must be <= max_digits ({params['max_digits']})")


def _answer_only(problem: Problem, params: Mapping[str, Any]) -> str:
    return f" {MARKER} {problem.reference}"


def _restate(problem: Problem, params: Mapping[str, Any]) -> str:
    operands, ops = problem.data
    expression = str(operands[0]) + "".join(f"{op}{value}" for op, value in zip(ops, operands[1:], strict=True))
    return f" {expression}={problem.reference}\n{MARKER} {problem.reference}"


def _scratchpad(problem: Problem, params: Mapping[str, Any]) -> str:
    operands, ops = problem.data
    lines, value = [], operands[0]
    for op, operand in zip(ops, operands[1:], strict=True):
        lines.append(scratchpad_line(value, op, operand))
        value = apply(op, value, operand)
    return " " + "\n".join(lines) + f"\n{MARKER} {problem.reference}"


class ArithmeticTask(SuiteTask):
    """Word problems with one exact integer answer after `####`."""

    name = "arithmetic"
    capability = (
        "Solve short arithmetic word problems (adding or subtracting two two-digit numbers) "
        "and give the final answer as an integer after '####' on the last line."
    )
    template = "Question: {question}\nAnswer:"
    # Longest eval-distribution completion (two 2-digit operands, scratchpad family)
    # is 43 characters including the stop string; a little slack, no more.
    decoding = Decoding(max_new_tokens=48)
    stop = ("\n\n",)
    # Opening order where the landscape's curves do not decide: the reference recipe's family
    # (the scratchpad, docs/tasks.md) first.
    hints = TaskHints(
        opening_order=("scratchpad", "restate", "answer_only"),
        contrast=("answer_only", "scratchpad"),
        reference="scratchpad",
    )
    eval_params = MappingProxyType(
        {"min_digits": 2, "max_digits": 2, "operands": 2, "ops": "mixed", "templates": len(QUESTIONS)}
    )

    def sample(self, rng: random.Random, params: Mapping[str, Any]) -> Problem:
        choices = {"add": "+", "sub": "-", "mixed": "+-"}[params["ops"]]
        while True:  # resample until every intermediate result is >= 0
            operands = [
                rng.randint(10 ** (digits - 1) if digits > 1 else 0, 10**digits - 1)
                for digits in (
                    rng.randint(params["min_digits"], params["max_digits"]) for _ in range(params["operands"])
                )
            ]
            ops = [rng.choice(choices) for _ in range(params["operands"] - 1)]
            value, valid = operands[0], True
            for op, operand in zip(ops, operands[1:], strict=True):
                value = apply(op, value, operand)
                valid = valid and value >= 0
            if valid:
                break
        question = phrase(rng, operands, ops, params["templates"])
        # The bare equation is a seal key too: the same numbers in other words are
        # still the same item, and training on them would teach its answer. So is every
        # leading sub-equation: a three-operand problem opens with the sentences of a
        # two-operand one, and a row holding a sealed item's sentences is a copy of it
        # (the contamination check refuses such data, an honest generator must not make
        # it). For the two-operand evaluation items this adds no key.
        steps = [str(operands[0])]
        for op, x in zip(ops, operands[1:], strict=True):
            steps.append(f"{steps[-1]}{op}{x}")
        return Problem(question, value, keys=tuple(steps[1:]), data=(tuple(operands), tuple(ops)))

    def families(self) -> tuple[FamilySpec, ...]:
        return (
            FamilySpec("answer_only", "the answer line only: ' #### 85'", PROBLEM_KNOBS, _answer_only, _check_digits),
            FamilySpec(
                "restate", "the equation with its result, then the answer line", PROBLEM_KNOBS, _restate, _check_digits
            ),
            FamilySpec(
                "scratchpad",
                "per operation, digit pairs from the units with carries, result digits reversed; then the answer line",
                PROBLEM_KNOBS,
                _scratchpad,
                _check_digits,
            ),
        )

    def check(self, reference: Any, output: str) -> Score:
        line = final_line(output, self.stop)
        if not line.startswith(MARKER):
            return Score(0.0, f"last line does not start with {MARKER!r}")
        answer = line[len(MARKER) :].strip().replace(",", "")
        if not _ANSWER.fullmatch(answer):
            return Score(0.0, f"no integer after {MARKER!r}")
        if int(answer) != int(reference):
            return Score(0.0, f"wrong answer {int(answer)}")
        return Score(1.0, "correct")

    def partial_credit(self, reference: Any, output: str) -> float:
        # Format only: an integer after the marker on the last line.
        line = final_line(output, self.stop)
        return 0.1 if line.startswith(MARKER) and _ANSWER.fullmatch(line[len(MARKER) :].strip()) else 0.0

    def pretrain_lines(self, rng: random.Random) -> list[str]:
        # Numbers in running prose and equations in words: the domain without the
        # task's question/answer format or its marker.
        a, b = rng.randint(0, 999), rng.randint(0, 999)
        year, count = rng.randint(1800, 2030), rng.randint(2, 90)
        return [
            rng.choice(
                (
                    f"In {year} the village had {a} houses and {b} wells.",
                    f"The shop sold {a} cups on Monday and {b} on Tuesday.",
                    f"A train with {count} cars left at {rng.randint(1, 12)} o'clock.",
                )
            ),
            rng.choice((f"{a} plus {b} makes {a + b}.", f"{max(a, b)} minus {min(a, b)} leaves {abs(a - b)}.")),
        ]
