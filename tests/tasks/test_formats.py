"""Properties every task shares: completions, prompts, garbage outputs, pretraining text."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsi_master.tasks import PARTIAL_CAP, SPLITS, EvalItem, Task, get_task
from rsi_master.tasks._text import is_plain_ascii, normalise

from .helpers import GARBAGE, TASK_NAMES

# Strings that only appear in a task's prompt/answer format: the base model's
# pretraining text must not teach the format.
FORMAT_MARKERS = (
    "####",
    "Question:",
    "Answer:",
    "Functions:",
    "Request:",
    "Call:",
    "Examples:",
    "Program:",
    "Facts:",
    '"arguments"',
    "->",
)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_task_follows_the_protocol(name):
    task = get_task(name)
    assert isinstance(task, Task)
    assert task.decoding.do_sample is False
    assert task.stop and all(task.stop)
    assert "{question}" in task.template
    assert len(task.generators()) >= 2


@pytest.mark.parametrize("name", TASK_NAMES)
def test_completions_end_with_exactly_one_stop_and_fit_decoding(name):
    task = get_task(name)
    stop = task.stop[0]
    for family in task.generators().values():
        for example in family.generate({}, 11, 200):
            prompt, completion = example["prompt"], example["completion"]
            assert completion.endswith(stop), (family.name, completion)
            assert all(s not in completion[: -len(stop)] for s in task.stop), "stop string inside a completion"
            assert all(s not in prompt for s in task.stop)
            assert is_plain_ascii(prompt + completion)
            # The evaluator generates at most max_new_tokens characters: default
            # params match the evaluation distribution, so every target must fit.
            assert len(completion) <= task.decoding.max_new_tokens, (family.name, len(completion))
            assert len(prompt) + len(completion) <= 320
            # The target completion is itself a correct answer, for eval-style scoring too.
            assert task.reward(example, completion) == 1.0
            item = EvalItem("x", prompt, example["check"])
            assert task.score(item, completion).score == 1.0


@pytest.mark.parametrize("name", TASK_NAMES)
def test_eval_prompts_are_plain_and_short(name):
    task = get_task(name)
    for split in SPLITS:
        for item in task.eval_items(split):
            assert is_plain_ascii(item.prompt)
            assert len(item.prompt) <= 200
            assert all(s not in item.prompt for s in task.stop)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_garbage_scores_zero_quickly_with_a_reason(name):
    task = get_task(name)
    item = task.eval_items("dev")[0]
    example = task.generator(next(iter(task.generators()))).generate({}, 0, 1)[0]
    for output in (*GARBAGE, None, 42, b"#### 1"):
        start = time.monotonic()
        score = task.score(item, output)  # type: ignore[arg-type]
        assert score.score == 0.0 and score.reason, output if not isinstance(output, str) else output[:40]
        assert 0.0 <= task.reward(example, output) <= PARTIAL_CAP  # type: ignore[arg-type]
        assert time.monotonic() - start < 1.0


@pytest.mark.parametrize("name", TASK_NAMES)
def test_reward_needs_a_check_entry(name):
    with pytest.raises(ValueError, match="check"):
        get_task(name).reward({"prompt": "x"}, "y")


@pytest.mark.parametrize("name", TASK_NAMES)
def test_pretrain_text_is_domain_text_without_formats_or_items(name):
    task = get_task(name)
    lines = task.pretrain_text(3, 400)
    assert len(lines) == 400
    assert lines == task.pretrain_text(3, 400)
    assert lines != task.pretrain_text(4, 400)
    prefix, suffix = task.template.split("{question}")
    question_lines = {
        normalise(line)
        for split in SPLITS
        for item in task.eval_items(split)
        for line in item.prompt.removeprefix(prefix).removesuffix(suffix).split("\n")
    }
    for line in lines:
        assert line and "\n" not in line and is_plain_ascii(line)
        assert not any(marker in line for marker in FORMAT_MARKERS), line
        flat = normalise(line)
        assert not any(question in flat for question in question_lines), line


def _pretrain_styled(name: str, ref) -> str:
    """A right answer written the way the pretraining text writes it."""
    if name == "arithmetic":
        return f" The total makes {ref}."
    if name == "function_calling":
        return " " + str(ref["arguments"]).replace("'", '"')
    if name == "program_synthesis":
        return f" Applying {ref['program']} to the list gives {ref['tests'][0][1]}."
    return f" {ref} is the answer."


@pytest.mark.parametrize("name", TASK_NAMES)
def test_pretrain_style_answers_score_zero(name):
    """Output in the pretraining style, even with the right content, is not the format."""
    task = get_task(name)
    for item in task.eval_items("dev")[:50]:
        assert task.score(item, _pretrain_styled(name, item.reference)).score == 0.0


@pytest.mark.parametrize("name", TASK_NAMES)
def test_reward_is_one_only_for_right_outputs(name):
    task = get_task(name)
    examples = task.generator(next(iter(task.generators()))).generate({}, 9, 60)
    for right, other in itertools.pairwise(examples):
        if task.reward(right, other["completion"]) == 1.0:
            assert task.score(EvalItem("x", "", right["check"]), other["completion"]).score == 1.0
        else:
            assert 0.0 <= task.reward(right, other["completion"]) <= PARTIAL_CAP


def _knob_values(knob):
    if knob.kind == "choice":
        return st.sampled_from(knob.choices)
    if knob.kind == "int":
        return st.integers(int(knob.low), int(knob.high))
    return st.floats(knob.low, knob.high, allow_nan=False)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_any_valid_params_give_valid_unsealed_examples(name):
    """Property: across the whole knob space (not only defaults) every generated example is
    outside the seal, ends with one stop string, is plain ASCII and earns full reward."""
    task = get_task(name)
    family = next(iter(task.generators().values()))
    params = st.fixed_dictionaries({knob.name: _knob_values(knob) for knob in family.knobs})

    @settings(max_examples=25, deadline=None, derandomize=True)
    @given(params=params, seed=st.integers(0, 2**32))
    def check(params, seed):
        try:
            examples = family.generate(params, seed, 5)
        except ValueError:
            return  # a cross-knob constraint (min > max): refused with a message, tested elsewhere
        for family_spec in task.generators().values():
            for example in family_spec.generate(params, seed, 5) if family_spec is not family else examples:
                completion = example["completion"]
                assert completion.endswith(task.stop[0]) and task.stop[0] not in completion[: -len(task.stop[0])]
                assert is_plain_ascii(example["prompt"] + completion)
                assert task.reward(example, completion) == 1.0
        sealed = {normalise(item.prompt) for split in SPLITS for item in task.eval_items(split)}
        assert not {normalise(e["prompt"]) for e in examples} & sealed

    check()
