"""`program_synthesis`: items are well-posed and the checker executes programs."""

from __future__ import annotations

import time

import pytest

from rsi_master.tasks import EvalItem, get_task
from rsi_master.tasks._dsl import DslError, format_program, parse, run
from rsi_master.tasks._ps_programs import canonical_programs

TASK = get_task("program_synthesis")
REF = {"program": "map(+1) | map(*2)", "tests": [[[1, 2], [4, 6]], [[0], [2]], [[5, 5, 1], [12, 12, 4]]]}
ITEM = EvalItem("program_synthesis/dev/x", "Examples:\n...\nProgram:", REF)


@pytest.mark.parametrize(
    "output",
    [" map(+1) | map(*2)", "map(+1)|map(*2)\n\n", " map(*2) | map(+2)", " add 1, then times 2\nmap(+1) | map(*2)"],
)
def test_right_and_equivalent_programs_pass(output):
    assert TASK.score(ITEM, output).score == 1.0


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        (" map(+2)", "wrong output"),
        (" map(+1) | map(*2) | sum", "wrong output"),  # an int is not a list
        (" map(+1) | map(*2)\nthat is all", "does not parse"),
        (" until(<0, sort)", "limit"),
        (" repeat(99, repeat(99, repeat(99, map(+1))))", "limit"),
        (" open('/etc/passwd')", "does not parse"),
        (" [4,6]", "does not parse"),
    ],
)
def test_wrong_programs_say_why(output, reason):
    start = time.monotonic()
    score = TASK.score(ITEM, output)
    assert score.score == 0.0 and reason in score.reason, score
    assert time.monotonic() - start < 1.0


def test_items_are_consistent_and_unambiguous():
    """Every reference program passes its own tests, and no other depth<=2 behaviour
    fits the shown examples while failing hidden ones."""
    others = canonical_programs(2)
    for item in TASK.eval_items("dev"):
        program = parse(item.reference["program"])
        tests = item.reference["tests"]
        assert len(tests) == 3 + 5
        assert all(run(program, x) == y for x, y in tests)
        shown = item.prompt.removeprefix("Examples:\n").removesuffix("\nProgram:").split("\n")
        assert len(shown) == 3
        for other in others:
            if _outputs(other, tests[:3]) == [y for _, y in tests[:3]]:
                assert _outputs(other, tests[3:]) == [y for _, y in tests[3:]], format_program(other)


def _outputs(program, tests):
    """Outputs of `program` on the inputs of `tests`, None if it fails on any."""
    try:
        return [run(program, x) for x, _ in tests]
    except DslError:
        return None


def test_ambiguity_check_has_teeth():
    """Without disambiguation some drawn items are ambiguous: the check above would fail."""
    import random

    rng = random.Random(1)
    others = canonical_programs(2)
    params = {**TASK.eval_params, "disambiguate": False}
    ambiguous = 0
    for _ in range(40):
        tests = TASK.sample(rng, params).reference["tests"]
        shown, hidden = [y for _, y in tests[:3]], [y for _, y in tests[3:]]
        ambiguous += any(_outputs(o, tests[:3]) == shown and _outputs(o, tests[3:]) != hidden for o in others)
    assert ambiguous > 0


def test_eval_depths_are_one_and_two():
    depths = {item.reference["program"].count("|") + 1 for item in TASK.eval_items("review")}
    assert depths == {1, 2}


def test_every_single_stage_guess_stays_below_the_base_target():
    items = TASK.eval_items("dev")
    for program in canonical_programs(1):
        text = format_program(program)
        correct = sum(TASK.score(item, text).score for item in items)
        assert correct / len(items) <= 0.15, text


def test_trace_family_shows_intermediate_values():
    example = TASK.generator("trace_then_program").generate({"min_depth": 2, "max_depth": 2}, 0, 1)[0]
    trace, program = example["completion"].strip().split("\n")
    first_input = example["check"]["tests"][0][0]
    stages = program.split(" | ")
    assert len(trace.split(" ")) == len(stages) == 2
    assert trace.split(" ")[0] == str(run(parse(stages[0]), first_input)).replace(" ", "")


def _example(family, **params):
    example = TASK.generator(family).generate({"min_depth": 2, "max_depth": 2, **params}, 0, 1)[0]
    lines = example["completion"].strip("\n").lstrip(" ").split("\n")
    tests = example["check"]["tests"]
    return lines, [parse(s) for s in lines[-1].split(" | ")], tests


def _show(value):
    return str(value).replace(" ", "")


def test_steps_family_names_each_stage_with_its_value_on_the_first_example():
    lines, stages, tests = _example("steps_then_program")
    assert len(lines) == len(stages) + 1 == 3
    value = tests[0][0]
    for line, stage in zip(lines, stages, strict=False):
        value = run(stage, value)
        assert line == f"{format_program(stage)} {_show(value)}"
    assert value == tests[0][1]  # the last step's value is the first example's output
    first, _, _ = _example("first_steps_then_program")
    assert first == [lines[0], lines[-1]]  # every stage but the last


def test_outputs_family_restates_every_shown_output_in_order():
    lines, _, tests = _example("outputs_then_program", n_examples=4)
    assert len(lines) == 2
    assert lines[0].split(" ") == [_show(y) for _, y in tests[:4]]


def test_trace_all_family_shows_every_shown_input_after_the_first_stage():
    lines, stages, tests = _example("trace_all_then_program")
    assert lines[0].split(" ") == [_show(run(stages[0], x)) for x, _ in tests[:3]]


def test_reward_gives_shaped_credit_by_tests_passed():
    example = {"check": REF}
    assert TASK.reward(example, " map(*2) | map(+2)") == 1.0
    none_pass = TASK.reward(example, " reverse")
    some_pass = TASK.reward(example, " map(+1) | map(*2) | take(1)")  # right on the 1-element test
    assert none_pass == pytest.approx(0.1) and none_pass < some_pass < 0.5
    assert TASK.reward(example, " not a program") == 0.0
