"""`knowledge`: facts in the prompt, short answers, two-hop questions."""

from __future__ import annotations

import pytest

from rsi_master.tasks import EvalItem, get_task

TASK = get_task("knowledge")
ITEM = EvalItem("knowledge/dev/x", "Facts: ...\nAnswer:", "Pemtor")


@pytest.mark.parametrize("output", [" Pemtor", "pemtor.\n\n", ' "Pemtor"', " Vorla lives in Pemtor.\nPemtor"])
def test_right_answers(output):
    assert TASK.score(ITEM, output).score == 1.0


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        (" Ruvia", "wrong answer"),
        (" Vorla lives in Pemtor.", "wrong answer"),
        (" Pemtor\nI think", "wrong answer"),
        ("...", "empty"),
    ],
)
def test_wrong_answers_say_why(output, reason):
    score = TASK.score(ITEM, output)
    assert score.score == 0.0 and reason in score.reason


def test_answer_is_in_the_prompt_and_support_is_given():
    for item in TASK.eval_items("dev"):
        facts = item.prompt.split("\n")[0]
        assert item.reference in facts
        assert len(facts.removeprefix("Facts: ").split(". ")) == 4


def test_two_hop_questions_chain_two_facts():
    examples = TASK.generator("quote_then_answer").generate({"two_hop": 1.0}, 0, 50)
    for example in examples:
        quoted, answer = example["completion"].strip().split("\n")
        home_fact, region_fact = quoted.split(". ")
        home = home_fact.split(" lives in ")[1]
        assert region_fact.startswith(f"{home} is in ") and region_fact.rstrip(".").endswith(answer)
        assert answer == example["check"]


def test_mix_of_one_and_two_hop_in_eval():
    two_hop = sum("region" in item.prompt for item in TASK.eval_items("dev"))
    assert 30 <= two_hop <= 90


def test_constant_guess_is_below_the_base_target():
    answers = [item.reference for item in TASK.eval_items("dev")]
    assert max(answers.count(a) for a in set(answers)) / len(answers) <= 0.15


def test_reward_credits_only_the_format_of_a_wrong_answer():
    example = {"check": "Pemtor"}
    assert TASK.reward(example, " pemtor") == 1.0
    assert TASK.reward(example, " Ruvia") == pytest.approx(0.1)
    assert TASK.reward(example, " Vorla lives in Ruvia.") == 0.0


def test_chain_family_walks_the_supporting_facts():
    for example in TASK.generator("chain_then_answer").generate({}, 3, 40):
        chain, answer = example["completion"].strip().split("\n")
        hops = chain.split(" > ")
        assert hops[-1] == answer == example["check"] and len(hops) in (2, 3)
        assert all(hop in example["prompt"] for hop in hops)
