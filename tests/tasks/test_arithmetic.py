"""`arithmetic`: checker, scratchpad arithmetic and problem constraints."""

from __future__ import annotations

import random
import re

import pytest

from rsi_master.tasks import EvalItem, get_task
from rsi_master.tasks._arithmetic_text import scratchpad_line

TASK = get_task("arithmetic")
ITEM = EvalItem("arithmetic/dev/x", "Question: ...\nAnswer:", 85)


@pytest.mark.parametrize(
    "output",
    [" #### 85", "#### 85\n\n", " 47+38=85\n#### 85\n\nQuestion: more", " #### 85   ", "####85", " #### 0085"],
)
def test_right_answers(output):
    assert TASK.score(ITEM, output).score == 1.0


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        (" #### 84", "wrong answer 84"),
        (" 85", "does not start"),
        (" #### 85\nso the answer", "does not start"),
        (" #### eighty-five", "no integer"),
        (" #### 85.0", "no integer"),
        (" #### 8 5", "no integer"),
        ("\n\n#### 85", "does not start"),  # the stop string comes first: nothing before it
    ],
)
def test_wrong_answers_say_why(output, reason):
    score = TASK.score(ITEM, output)
    assert score.score == 0.0 and reason in score.reason


@pytest.mark.parametrize(
    ("a", "op", "b"), [(47, "+", 38), (99, "+", 99), (85, "-", 79), (100, "-", 1), (7, "+", 456), (5, "-", 5)]
)
def test_scratchpad_lines_are_correct_arithmetic(a, op, b):
    line = scratchpad_line(a, op, b)
    head, steps = line.split(": ")
    digits = steps.split(" r")[1]
    assert int(digits[::-1]) == (a + b if op == "+" else a - b)
    width = len(head.split(op)[0])
    assert len(head.split(op)[1]) == width  # operands padded to one width
    for step in steps.split(" r")[0].split(" "):
        x, y, carry, digit, out = map(int, re.fullmatch(r"(\d)[+-](\d)[+-](\d)=(\d)c(\d)", step).groups())
        total = x + y + carry if op == "+" else x - y - carry
        assert digit == total % 10 and out == (total // 10 if op == "+" else int(total < 0))


def test_scratchpad_example_layout():
    assert scratchpad_line(47, "+", 38) == "47+38: 7+8+0=5c1 4+3+1=8c0 r58"
    assert scratchpad_line(57, "+", 68) == "57+68: 7+8+0=5c1 5+6+1=2c1 r521"


def test_three_operand_problems_never_go_negative_and_answer_is_last_line():
    family = TASK.generator("scratchpad")
    for example in family.generate({"operands": 3, "min_digits": 1, "max_digits": 3}, 5, 300):
        assert example["check"] >= 0
        numbers = [int(n) for n in re.findall(r"\d+", example["prompt"])]
        assert len(numbers) == 3 and all(0 <= n <= 999 for n in numbers)
        lines = example["completion"].strip().split("\n")
        assert len(lines) == 3 and lines[-1] == f"#### {example['check']}"


def test_eval_distribution_is_two_two_digit_numbers():
    for item in TASK.eval_items("final"):
        numbers = [int(n) for n in re.findall(r"\d+", item.prompt)]
        assert len(numbers) == 2 and all(10 <= n <= 99 for n in numbers)
    ops = {"more" in item.prompt or "put in" in item.prompt or "adds" in item.prompt for item in TASK.eval_items("dev")}
    assert ops == {True, False}


def test_constant_guess_is_below_the_base_target():
    answers = [item.reference for item in TASK.eval_items("dev")]
    best = max(answers.count(value) for value in set(answers))
    assert best / len(answers) <= 0.15


def test_ops_knob_restricts_operators():
    rng = random.Random(0)
    for _ in range(200):
        _, ops = TASK.sample(rng, {**TASK.eval_params, "ops": "sub"}).data
        assert set(ops) == {"-"}


def test_reward_credits_only_the_format_of_a_wrong_answer():
    example = {"check": 85}
    assert TASK.reward(example, " #### 85") == 1.0
    assert TASK.reward(example, " #### 84") == pytest.approx(0.1)
    assert TASK.reward(example, " 85") == 0.0
