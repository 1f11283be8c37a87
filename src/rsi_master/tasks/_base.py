"""Shared machinery behind every task: sealed evaluation sets, generators, scoring.

A concrete task supplies three things: a problem sampler (`sample`), the evaluation
distribution's parameters, and a checker (`check`). This base class turns them into
the `Task` protocol: it draws the sealed `dev`/`review`/`final` items from a seal key
(a run's secret, or the public seed: see `_seal_key.py`), wraps each generator family
so that it can never emit a sealed item, and makes `score` and `reward` total functions (any output, any length, any characters: a Score, never
an exception).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, NamedTuple

from ._knobs import validate_params, validate_size
from ._protocol import SPLITS, Decoding, EvalItem, GeneratorFamily, Knob, Score, Split, TaskHints
from ._seal_key import PUBLIC_SEAL_KEY, SealKey
from ._text import derive_seed, normalise

__all__ = ["EVAL_SIZE", "PARTIAL_CAP", "FamilySpec", "Problem", "SealedExhaustedError", "SuiteTask"]

EVAL_SIZE = 200  # items per split; PostTrainBench-scale splits are out of reach on CPU
MAX_REJECTIONS = 10_000  # consecutive rejected samples before a generator gives up
PARTIAL_CAP = 0.5  # most reward a wrong output can earn (see SuiteTask.partial_credit)


class _SealedSets(NamedTuple):
    items: dict[str, tuple[EvalItem, ...]]
    keys: frozenset[str]


class SealedExhaustedError(RuntimeError):
    """A generator could not find enough problems outside the sealed evaluation sets."""


@dataclass(frozen=True)
class Problem:
    """One sampled problem before it is rendered.

    `question` fills the template; `reference` is what the checker needs (JSON-able);
    `keys` are extra texts that must not coincide with a sealed item's keys (for
    example the request sentence of a function call, which determines the answer on
    its own); `data` is task-private structure the completion formatters use.
    """

    question: str
    reference: Any
    keys: tuple[str, ...] = ()
    data: Any = None

    def seal_keys(self) -> frozenset[str]:
        """Normalised texts that identify this problem for sealing."""
        return frozenset(normalise(text) for text in (self.question, *self.keys))


@dataclass(frozen=True)
class FamilySpec:
    """A generator family as a task declares it: knobs plus a completion formatter."""

    name: str
    description: str
    knobs: tuple[Knob, ...]
    complete: Callable[[Problem, Mapping[str, Any]], str]
    check: Callable[[Mapping[str, Any]], None] = field(default=lambda params: None)


class SuiteTask:
    """Base class implementing the `Task` protocol from a sampler and a checker."""

    name: str
    capability: str
    template: str
    decoding: Decoding
    stop: tuple[str, ...]
    eval_params: Mapping[str, Any]  # sampler parameters of the sealed evaluation sets
    hints: TaskHints = TaskHints()  # what measuring the task found (see TaskHints)

    def __init__(self, seal_seed: int | None = None, *, seal_key: SealKey | None = None) -> None:
        # Without a key the instance holds the public splits (reproducible from the code,
        # protecting nothing); a run's harness passes the run's secret key.
        if seal_seed is not None and seal_key is not None:
            raise ValueError("give a seal_seed or a seal_key, not both")
        self.seal_key = (
            seal_key if seal_key is not None else (PUBLIC_SEAL_KEY if seal_seed is None else SealKey(seed=seal_seed))
        )
        if not isinstance(self.seal_key, SealKey):
            raise ValueError(f"seal_key must be a SealKey, got {type(self.seal_key).__name__}")

    # --- to implement -----------------------------------------------------------
    def sample(self, rng: random.Random, params: Mapping[str, Any]) -> Problem:
        """Draw one problem; `params` holds validated knob values."""
        raise NotImplementedError

    def families(self) -> tuple[FamilySpec, ...]:
        """The generator families of this task."""
        raise NotImplementedError

    def check(self, reference: Any, output: str) -> Score:
        """Score `output` against `reference`; may raise, `score` catches."""
        raise NotImplementedError

    def pretrain_lines(self, rng: random.Random) -> list[str]:
        """Some free-form domain text (any number of lines) for the base model."""
        raise NotImplementedError

    def partial_credit(self, reference: Any, output: str) -> float:
        """Shaped credit for a *wrong* output (well-formed, partly right), used by `reward`.

        GRPO on a tiny model gets no gradient when every sample in a group scores 0;
        a small credit for the right format and for partly right content gives it one.
        `reward` caps it at PARTIAL_CAP so that no wrong answer is worth a right one.
        """
        return 0.0

    # --- Task protocol ------------------------------------------------------------
    def render(self, question: str) -> str:
        """Fill the fixed template (plain replace: questions may contain braces)."""
        return self.template.replace("{question}", question)

    @cached_property
    def _sealed(self) -> _SealedSets:
        taken: set[str] = set()
        items: dict[str, tuple[EvalItem, ...]] = {}
        for split in SPLITS:
            rng = random.Random(self.seal_key.split_seed(self.name, split))
            drawn: list[EvalItem] = []
            while len(drawn) < EVAL_SIZE:
                problem = self.sample(rng, self.eval_params)
                keys = problem.seal_keys()
                if keys & taken:  # items are unique within and across splits
                    continue
                taken |= keys
                sample_id = f"{self.name}/{split}/{len(drawn):04d}"
                drawn.append(EvalItem(sample_id, self.render(problem.question), problem.reference))
            items[split] = tuple(drawn)
        return _SealedSets(items, frozenset(taken))

    @property
    def sealed_keys(self) -> frozenset[str]:
        """Normalised keys of every sealed item of every split."""
        return self._sealed.keys

    def eval_items(self, split: Split) -> list[EvalItem]:
        """The sealed items of `split` in sample-ID order.

        Deep copies: references are dicts and lists, and a caller that edits one must not
        change what this process scores next.
        """
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; splits are {list(SPLITS)}")
        return copy.deepcopy(list(self._sealed.items[split]))

    def is_sealed(self, problem: Problem) -> bool:
        """True when `problem` coincides with any sealed evaluation item.

        It coincides when it shares a seal key with one, or when it holds one among other
        text (`holds_sealed_item`). Only generators ask this: the sealed sets are drawn
        with the seal keys alone, so a task's `holds_sealed_item` cannot change them.
        """
        return bool(problem.seal_keys() & self.sealed_keys) or self.holds_sealed_item(problem)

    def holds_sealed_item(self, problem: Problem) -> bool:
        """True when `problem` carries most of a sealed item without sharing a seal key.

        Seal keys are exact texts. A task whose problems can carry an item's content
        among other text, in a form the contamination check still counts as a copy,
        overrides this; by default nothing more is excluded.
        """
        return False

    def generators(self) -> dict[str, GeneratorFamily]:
        """Each family wrapped so that it validates params and never emits a sealed item."""
        return {
            spec.name: GeneratorFamily(spec.name, spec.description, spec.knobs, partial(self._generate, spec))
            for spec in self.families()
        }

    def generator(self, family: str) -> GeneratorFamily:
        """One family by name; ValueError naming the known families otherwise."""
        families = self.generators()
        if family not in families:
            raise ValueError(f"task {self.name!r} has no generator {family!r}; known: {sorted(families)}")
        return families[family]

    def _generate(self, spec: FamilySpec, params: Mapping[str, Any] | None, seed: int, n: int) -> list[dict[str, Any]]:
        values = validate_params(spec.name, spec.knobs, params)
        spec.check(values)
        validate_size(seed, n)
        # The family is not part of the seed: with equal seed and problem knobs every
        # family draws the same problems, so families are compared on the same data.
        rng = random.Random(derive_seed("train", self.name, seed))
        examples: list[dict[str, Any]] = []
        rejected = 0
        while len(examples) < n:
            problem = self.sample(rng, values)
            if self.is_sealed(problem):
                rejected += 1
                if rejected > MAX_REJECTIONS:
                    raise SealedExhaustedError(
                        f"{self.name}/{spec.name}: over {MAX_REJECTIONS} samples in a row hit sealed "
                        f"evaluation items; widen the parameters {values}"
                    )
                continue
            rejected = 0
            examples.append(
                {
                    "prompt": self.render(problem.question),
                    "completion": spec.complete(problem, values) + self.stop[0],
                    "check": problem.reference,
                    "task": self.name,
                    "family": spec.name,
                }
            )
        return examples

    def score(self, item: EvalItem, output: str) -> Score:
        """Check one model output; total: garbage gets zero with a reason."""
        return self._safe_check(item.reference, output)

    def reward(self, example: Mapping[str, Any], output: str) -> float:
        """GRPO reward in [0, 1] from a generated example's own `check` entry.

        1.0 exactly when the checker accepts the output (as `score` would); otherwise the
        task's shaped `partial_credit`, capped at PARTIAL_CAP.
        """
        if not isinstance(example, Mapping) or "check" not in example:
            raise ValueError("reward needs a generated example with a 'check' entry")
        score = self._safe_check(example["check"], output).score
        if score >= 1.0 or not isinstance(output, str):
            return score
        try:
            partial = float(self.partial_credit(example["check"], output))
        except Exception:  # same totality as score: a sampled completion never crashes GRPO
            return 0.0
        return min(PARTIAL_CAP, max(0.0, partial))

    def _safe_check(self, reference: Any, output: Any) -> Score:
        if not isinstance(output, str):
            return Score(0.0, f"output is {type(output).__name__}, not str")
        try:
            result = self.check(reference, output)
        except Exception as exc:  # a model output must never crash an evaluation run
            return Score(0.0, f"checker error: {type(exc).__name__}: {str(exc)[:200]}")
        return Score(min(1.0, max(0.0, float(result.score))), result.reason)

    def pretrain_text(self, seed: int, n: int) -> list[str]:
        """`n` lines of domain text in free form, none of which contains a sealed item."""
        validate_size(seed, n)
        rng = random.Random(derive_seed("pretrain", self.name, seed))
        sealed = self.sealed_keys
        lines: list[str] = []
        while len(lines) < n:
            for line in self.pretrain_lines(rng):
                if normalise(line) not in sealed and len(lines) < n:
                    lines.append(line)
        return lines
