"""`knowledge`: the GPQA analogue, with the knowledge in the prompt.

A few facts about made-up people and places, then a short-answer question; two-hop
questions chain two facts ("where is the region of X's home"). The answer is a made-up
word or a common noun that must be copied from the right fact, so a base model that
has not learnt the format scores near zero (no 25% guessing floor as with 4-way
multiple choice). The checker compares the last line, case-insensitively, with
surrounding punctuation stripped.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Mapping
from functools import cached_property
from types import MappingProxyType
from typing import Any

from ._base import FamilySpec, Problem, SuiteTask
from ._knowledge_world import PERSONS, PLACES, REGION, RELATIONS
from ._protocol import SPLITS, Decoding, Knob, Score, TaskHints
from ._text import final_line

__all__ = ["KnowledgeTask"]

TWO_HOP_QUESTION = "In which region does {s} live?"
_STRIP = " .,;:!?\"'`"

# What a training row must not hold: an evaluation item as the contamination check
# (expos.contamination) sees it. The check compares 3- and 4-word shingles within a
# clause, ignoring "template" shingles found in 5 or more protected items, and fails a
# row whose shingles have Jaccard >= 0.9 with an item's rare ones. Job, pet and colour
# words (12 of each) are template there, so an item's rare shingles are mostly its
# names: a row asking the same question about the same person, with other values and
# other facts, can match an item in full (Jaccard 1.0) without sharing its seal key.
# A row is therefore rejected when it holds NEAR_COPY_SHARE of an item's rare shingles,
# whatever else it holds: Jaccard >= 0.9 needs 90%, and the 0.2 margin covers MinHash
# error. The constants mirror ContaminationConfig's defaults (a test pins them).
SHINGLE_WORDS = (3, 4)
TEMPLATE_ITEMS = 5
NEAR_COPY_SHARE = 0.7
# Clause ends and words as the check cuts knowledge text, which holds only letters,
# spaces and clause punctuation (a test pins the rare shingles against its index).
_CLAUSE_END = re.compile(r"[.?!;:,)\]}](?=\s|$)")
_WORD = re.compile(r"[a-z0-9]+")

PROBLEM_KNOBS = (
    Knob("n_facts", "int", 4, 2, 6, help="facts in the prompt, supporting facts included"),
    Knob("two_hop", "float", 0.3, 0.0, 1.0, help="share of questions that chain two facts"),
    Knob("relations", "int", len(RELATIONS), 1, len(RELATIONS), help="relations asked about (diversity)"),
)


def _clause_shingles(clause: str) -> tuple[str, ...]:
    words = _WORD.findall(clause)
    return tuple(" ".join(words[i : i + k]) for k in SHINGLE_WORDS for i in range(len(words) - k + 1))


def shingles(text: str) -> set[str]:
    """The 3- and 4-word shingles of `text`, never across a clause, lowercased."""
    return {s for clause in _CLAUSE_END.split(text.lower()) for s in _clause_shingles(clause)}


def _answer_only(problem: Problem, params: Mapping[str, Any]) -> str:
    return " " + problem.reference


def _quote(problem: Problem, params: Mapping[str, Any]) -> str:
    return " " + " ".join(problem.data[0]) + "\n" + problem.reference


def _chain(problem: Problem, params: Mapping[str, Any]) -> str:
    return " " + " > ".join(problem.data[1]) + "\n" + problem.reference


class KnowledgeTask(SuiteTask):
    """Answer a question from facts given in the prompt, with a short answer."""

    name = "knowledge"
    capability = (
        "Answer a short question about made-up people and places using the facts given in the "
        "prompt (sometimes chaining two facts), replying with the answer word alone on the last line."
    )
    template = "Facts: {question}\nAnswer:"
    # Longest eval-distribution completion (quote family, two hops) is 59 characters.
    decoding = Decoding(max_new_tokens=64)
    stop = ("\n\n",)
    # The reference's continuation starts from the quote-then-answer curve's run, because that
    # curve is ahead of answer-only's (docs/tasks.md, "Learning curves").
    hints = TaskHints(
        opening_order=("answer_only", "chain_then_answer", "quote_then_answer"),
        contrast=("answer_only", "quote_then_answer"),
        reference="answer_only",
        reference_curve="quote_then_answer",
    )
    eval_params = MappingProxyType({"n_facts": 4, "two_hop": 0.3, "relations": len(RELATIONS)})

    def sample(self, rng: random.Random, params: Mapping[str, Any]) -> Problem:
        relations = RELATIONS[: params["relations"]]
        persons = rng.sample(PERSONS, params["n_facts"])
        subject, others = persons[0], persons[1:]
        if rng.random() < params["two_hop"]:
            home, region, *spare = rng.sample(PLACES, 4)
            support = [RELATIONS[0].fact.format(s=subject, o=home), REGION.fact.format(s=home, o=region)]
            question, answer, asked = TWO_HOP_QUESTION.format(s=subject), region, RELATIONS[0]
            chain = [subject, home, region]
            # Another place's region, so the second hop must follow the first.
            distractors = [REGION.fact.format(s=spare[0], o=spare[1])]
        else:
            asked = rng.choice(relations)
            answer = asked.draw(rng)
            support = [asked.fact.format(s=subject, o=answer)]
            question, chain, distractors = asked.question.format(s=subject), [subject, answer], []
        # Other people with the asked relation (the subject must be matched) and the
        # subject's other traits (the relation must be matched).
        traits = [r for r in relations if r is not asked]
        if traits and rng.random() < 0.5:
            trait = rng.choice(traits)
            distractors.append(trait.fact.format(s=subject, o=trait.draw(rng)))
        for person in others:
            relation = asked if rng.random() < 0.6 else rng.choice(relations)
            distractors.append(relation.fact.format(s=person, o=relation.draw(rng)))
        facts = support + distractors[: max(0, params["n_facts"] - len(support))]
        rng.shuffle(facts)
        text = " ".join(facts) + f"\nQuestion: {question}"
        core = question + " " + " ".join(support)
        return Problem(text, answer, keys=(core,), data=(tuple(support), tuple(chain)))

    @cached_property
    def _rare_shingles(self) -> tuple[dict[str, tuple[int, ...]], tuple[int, ...], int]:
        """Each rare shingle of the sealed prompts -> the items holding it; per item, the
        count of them that a row must hold to be rejected; the least such count."""
        sets = [shingles(item.prompt) for split in SPLITS for item in self._sealed.items[split]]
        frequency = Counter(s for item_shingles in sets for s in item_shingles)
        postings: dict[str, list[int]] = {}
        need: list[int] = []
        for i, item_shingles in enumerate(sets):
            rare = [s for s in item_shingles if frequency[s] < TEMPLATE_ITEMS]
            for s in rare:
                postings.setdefault(s, []).append(i)
            need.append(max(1, math.ceil(NEAR_COPY_SHARE * len(rare) - 1e-9)))
        return {s: tuple(items) for s, items in postings.items()}, tuple(need), min(need)

    @cached_property
    def _clause_items(self) -> dict[str, tuple[int, ...]]:
        return {}  # clause -> the item of each of its rare shingles; clauses repeat a lot

    def holds_sealed_item(self, problem: Problem) -> bool:
        # The seal key (question and supporting facts) catches a row holding an item's
        # question and answer among other facts; this catches what the check takes for
        # the item even with other answers: its question and its names' relations.
        postings, need, min_need = self._rare_shingles
        cache = self._clause_items
        items: list[int] = []
        for clause in set(_CLAUSE_END.split(self.render(problem.question).lower())):
            found = cache.get(clause)
            if found is None:
                found = cache[clause] = tuple(i for s in _clause_shingles(clause) for i in postings.get(s, ()))
            items += found
        # Per clause, not per distinct shingle: two clauses of a row share a rare shingle
        # only when two facts share a value (two people living in one place), and
        # counting it twice only rejects more.
        return len(items) >= min_need and any(count >= need[item] for item, count in Counter(items).items())

    def families(self) -> tuple[FamilySpec, ...]:
        return (
            FamilySpec("answer_only", "the answer word alone", PROBLEM_KNOBS, _answer_only),
            FamilySpec("quote_then_answer", "the supporting fact(s) quoted, then the answer", PROBLEM_KNOBS, _quote),
            FamilySpec(
                "chain_then_answer",
                "the entities along the supporting facts ('Vorla > Pemtor > Ruvia'), then the answer",
                PROBLEM_KNOBS,
                _chain,
            ),
        )

    def check(self, reference: Any, output: str) -> Score:
        answer = final_line(output, self.stop).strip(_STRIP)
        if not answer:
            return Score(0.0, "empty answer")
        if answer.casefold() != str(reference).casefold():
            return Score(0.0, f"wrong answer {answer[:40]!r}")
        return Score(1.0, "correct")

    def partial_credit(self, reference: Any, output: str) -> float:
        # Format only: a single word on the last line.
        answer = final_line(output, self.stop).strip(_STRIP)
        return 0.1 if answer and " " not in answer else 0.0

    def pretrain_lines(self, rng: random.Random) -> list[str]:
        # Facts in paraphrased prose: the domain's vocabulary without the prompt's
        # "Facts:/Question:/Answer:" format or its exact fact sentences.
        relation = rng.choice(RELATIONS)
        person = rng.choice(PERSONS)
        return [
            relation.prose.format(s=person, o=relation.draw(rng)),
            REGION.prose.format(s=rng.choice(PLACES), o=rng.choice(PLACES)),
        ]
