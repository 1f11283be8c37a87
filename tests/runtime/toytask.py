"""A tiny task that follows `rsi_master.tasks._protocol`, for runtime tests only.

Name the last letter of a short lowercase word: a fixed-offset copy that a ~20k-parameter
model learns in a few dozen steps; scored by a real checker (exact match), with a reward
for GRPO. `spaced` is a second format (the letter twice, spaced) for family tests.
"""

from __future__ import annotations

import random
from typing import Any

from rsi_master.tasks._protocol import Decoding, EvalItem, GeneratorFamily, Knob, Score

ALPHABET = "abcdef"


def _word(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(length))


class ToyTask:
    name = "toy"
    capability = "name the last letter of a short word"
    template = "rev {question}\n="
    decoding = Decoding(max_new_tokens=8)
    stop = (";",)

    def render(self, question: str) -> str:
        return self.template.format(question=question)

    def _eval_words(self) -> set[str]:
        return {item.prompt for s in ("dev", "review", "final") for item in self.eval_items(s)}

    def generators(self) -> dict[str, GeneratorFamily]:
        def gen(params: dict[str, Any], seed: int, n: int, spaced: bool) -> list[dict[str, Any]]:
            rng = random.Random(seed)
            banned = self._eval_words()
            out: list[dict[str, Any]] = []
            while len(out) < n:
                w = _word(rng, int(params.get("length", 3)))
                prompt = self.render(w)
                if prompt in banned:
                    continue
                ans = w[-1]
                comp = (f"{ans} {ans}" if spaced else ans) + ";"
                out.append({"prompt": prompt, "completion": comp, "check": {"answer": ans}})
            return out

        knobs = (Knob("length", "int", 3, low=1, high=4, help="word length"),)
        return {
            "plain": GeneratorFamily("plain", "answer only", knobs, lambda p, s, n: gen(p, s, n, False)),
            "spaced": GeneratorFamily("spaced", "spaced letters", knobs, lambda p, s, n: gen(p, s, n, True)),
        }

    def eval_items(self, split: str) -> list[EvalItem]:
        if split not in ("dev", "review", "final"):
            raise ValueError(f"unknown split {split!r}")
        rng = random.Random({"dev": 1, "review": 2, "final": 3}[split])
        words = sorted({_word(rng, 4) for _ in range(40)})[:20]
        return [EvalItem(f"toy-{split}-{i:03d}", self.render(w), w[-1]) for i, w in enumerate(words)]

    def score(self, item: EvalItem, output: str) -> Score:
        got = output.strip().split(" ")[0]
        if got == "boom":
            raise RuntimeError("checker exploded")  # lets tests exercise crash handling
        ok = got == item.reference
        return Score(1.0 if ok else 0.0, "exact" if ok else f"expected {item.reference!r}")

    def reward(self, example: dict[str, Any], output: str) -> float:
        got = output.split(";")[0].strip().split(" ")[0]
        return 1.0 if got == example["check"]["answer"] else 0.0

    def pretrain_text(self, seed: int, n: int) -> list[str]:
        rng = random.Random(seed)
        return [" ".join(_word(rng, rng.randint(1, 5)) for _ in range(6)) for _ in range(n)]


class ChatToyTask(ToyTask):
    """The toy task in chat format: prompts reach the model as its chat template's user turn."""

    chat = True
