"""`knowledge`: facts in the prompt, short answers, two-hop questions."""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from rsi_master.expos.contamination import ContaminationConfig, build_index, check, protected_items, tokens
from rsi_master.expos.contamination._normalise import CLAUSE
from rsi_master.tasks import SPLITS, EvalItem, Problem, get_task
from rsi_master.tasks._knowledge import NEAR_COPY_SHARE, SHINGLE_WORDS, TEMPLATE_ITEMS

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


# --- generators never emit a sealed item, as the contamination check sees one -----------
# The check compares rare word shingles, and job, pet and colour words are template to it:
# a row asking an item's question about the same person, with other answers and facts,
# used to fail it as a near-duplicate (Jaccard 1.0) without sharing the item's seal key.

KNOB_EXTREMES = [{"n_facts": n, "two_hop": h, "relations": r} for n in (2, 6) for h in (0.0, 1.0) for r in (1, 4)] + [
    {},
    {"n_facts": 5},
]
MARGIN_THRESHOLD = 0.7  # the check fails at 0.9; no clean row may come near


@cache
def _index(threshold: float):
    return build_index(protected_items(TASK), ContaminationConfig(near_dup_threshold=threshold))


def _checker_rare_shingles() -> dict[str, set[str]]:
    """Per sealed item, the rare shingles of its prompt as the contamination index holds them."""
    index = _index(0.9)
    rare: dict[str, set[str]] = {}
    for t in range(index.n_texts):
        if index.text_kind[t] == "prompt":
            ids = index.text_ids[t]
            item = index.items[int(index.text_item[t])]
            rare[item.sample_id] = {" ".join(index.words[i] for i in ids[s:e]) for s, e in index.rare_spans[t].tolist()}
    return rare


def _row_shingles(text: str, sizes: tuple[int, ...]) -> set[str]:
    """Shingles of a row, cut by the contamination check's own tokeniser."""
    out: set[str] = set()
    clause: list[str] = []
    for token in [*tokens(text), CLAUSE]:
        if token != CLAUSE:
            clause.append(token)
            continue
        out.update(" ".join(clause[i : i + k]) for k in sizes for i in range(len(clause) - k + 1))
        clause = []
    return out


def test_near_copy_rule_mirrors_the_contamination_check():
    config = ContaminationConfig()
    assert config.shingle_words == SHINGLE_WORDS and config.boilerplate_min_items == TEMPLATE_ITEMS
    assert config.near_dup_threshold - 0.2 >= NEAR_COPY_SHARE
    postings, need, _ = TASK._rare_shingles
    ours: dict[int, set[str]] = {}
    for shingle, items in postings.items():
        for i in items:
            ours.setdefault(i, set()).add(shingle)
    theirs = _checker_rare_shingles()
    sealed = [item for split in SPLITS for item in TASK.eval_items(split)]
    assert len(theirs) == len(sealed) == len(need)
    for i, item in enumerate(sealed):
        assert ours.get(i, set()) == theirs[item.sample_id], item.sample_id


@pytest.mark.heavy
@pytest.mark.parametrize("family", list(TASK.generators()))
def test_generators_never_emit_a_sealed_item_as_the_contamination_check_sees_it(family):
    # Before the near-copy rule, each family had 3 to 8 failed rows here at the margin.
    generator = TASK.generator(family)
    offset = list(TASK.generators()).index(family) * len(KNOB_EXTREMES)
    rows = [row for k, params in enumerate(KNOB_EXTREMES) for row in generator.generate(params, offset + k, 1500)]
    report = check(_index(MARGIN_THRESHOLD), rows)
    assert report.rows_failed == 0, report.findings[:3]
    # The same from the other side: no prompt holds NEAR_COPY_SHARE of an item's rare shingles.
    rare = _checker_rare_shingles()
    sizes = ContaminationConfig().shingle_words
    owners: dict[str, list[str]] = {}
    for sample_id, shingles in rare.items():
        for shingle in shingles:
            owners.setdefault(shingle, []).append(sample_id)
    for row in rows[::3]:
        held = Counter(i for s in _row_shingles(row["prompt"], sizes) for i in owners.get(s, ()))
        assert all(n < NEAR_COPY_SHARE * len(rare[i]) for i, n in held.items()), row["prompt"]


def test_a_row_the_check_failed_is_no_longer_generated():
    # This seed emitted 'What is the job of Kaldar?' (knowledge/dev/0133) with other jobs
    # at row 4248: the check failed it at Jaccard 1.0.
    rows = TASK.generator("quote_then_answer").generate({"n_facts": 3, "two_hop": 0.0, "relations": 4}, 101, 4300)
    assert check(_index(0.9), rows).rows_failed == 0


def test_a_row_holding_an_items_names_with_other_answers_is_rejected():
    item = next(item for item in TASK.eval_items("dev") if item.sample_id == "knowledge/dev/0133")
    assert "What is the job of Kaldar?" in item.prompt
    facts = "Jusko works as a smith. Bridar works as a miner. Kaldar works as a miner."
    question = f"{facts}\nQuestion: What is the job of Kaldar?"
    problem = Problem(question, "miner")
    assert not problem.seal_keys() & TASK.sealed_keys  # no shared seal key: other answers
    assert TASK.holds_sealed_item(problem) and TASK.is_sealed(problem)
    other = Problem(question.replace("Kaldar", "Vorla"), "miner")
    assert not TASK.is_sealed(other)
