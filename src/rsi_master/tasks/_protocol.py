"""The contract between the task suite and the runtime.

A task is pure Python (no torch): it generates training data, holds sealed evaluation
items, renders prompts with a fixed template, and scores model outputs with a real
checker. The runtime (training, evaluation) only talks to tasks through this surface.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

Split = Literal["dev", "review", "final"]
SPLITS: tuple[Split, ...] = ("dev", "review", "final")
# The highest peak learning rate a training spec takes (`runtime.TrainSpec`): a task's declared
# training range stays within it, or every trial drawn above it is refused as invalid.
MAX_LEARNING_RATE = 0.1


@dataclass(frozen=True)
class Decoding:
    """Fixed decoding for a task's evaluator (greedy by default)."""

    max_new_tokens: int
    do_sample: bool = False
    temperature: float = 1.0
    top_p: float = 1.0


@dataclass(frozen=True)
class EvalItem:
    """One sealed evaluation item. `reference` is never shown to an agent."""

    sample_id: str
    prompt: str
    reference: Any


@dataclass(frozen=True)
class Score:
    """Result of checking one model output: a score in [0, 1] and why."""

    score: float
    reason: str = ""


@dataclass(frozen=True)
class Knob:
    """One tunable parameter of a generator family."""

    name: str
    kind: Literal["int", "float", "choice"]
    default: Any
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()
    help: str = ""


@dataclass(frozen=True)
class GeneratorFamily:
    """A family of training-data generators with knobs.

    `generate(params, seed, n)` returns `n` examples, each a dict with at least
    `prompt` (already rendered through the task template) and `completion` (the text
    the model should produce, ending with the task's stop string), plus a `check` entry
    that the task's `reward` can use (for GRPO), never an evaluation item.

    `methods`: the training methods the family's rows are made for, the first the one a
    direction opens with (a family of GRPO prompts is no SFT data). `source`: where its rows
    come from: `generate` (this function, through `data.generate`) or `checkpoint` (sampled
    from a model of the run and kept by the task's scorer, through `data.sample`; `generate`
    then refuses, since no rows exist without a checkpoint).
    """

    name: str
    description: str
    knobs: tuple[Knob, ...]
    generate: Callable[[dict[str, Any], int, int], list[dict[str, Any]]]
    methods: tuple[str, ...] = ("sft",)
    source: Literal["generate", "checkpoint"] = "generate"


@dataclass(frozen=True)
class TaskHints:
    """What measuring a task found, as data of the task that the harness reads (all optional:
    a task without hints is measured and run on the landscape's curves alone).

    `opening_order`: the families the Main opens first, in order, where the landscape's curves
    do not tell them apart (the whole order for a task without curves); `contrast`: the two
    most different families, whose curves `rsi-master landscape measure` takes first;
    `reference`: the family of the hand-designed reference recipe; `reference_curve`: a
    family whose curve run is the first stage of the continued reference instead of the
    reference's own run (where the curves found a better family); `budget_s`: the
    wall-clock budget of a run that names none, where five minutes are too short to learn
    anything (why, in the task's module); `opens_with`: the family whose usual direction opens
    a run without a prior, before the seeded order of the rest (the one a practitioner tries
    first whatever the measurements: SFT on a task directory's train pool).

    The training ranges every direction of the task searches, where the generic small-model
    defaults (`orchestra.DEFAULT_TRAIN`: learning rate 5e-4 to 3e-3, batch 2 to 8) do not fit
    the task's model: `learning_rate` (low, high; searched on a log scale), `batch_sizes` (the
    choices) and `max_steps` (low, high; the contract's `max_train_steps` still caps a trial).
    A fresh direction's first trial is then the middle of these ranges."""

    opening_order: tuple[str, ...] = ()
    contrast: tuple[str, ...] = ()
    reference: str | None = None
    reference_curve: str | None = None
    budget_s: float | None = None
    opens_with: str | None = None
    learning_rate: tuple[float, float] | None = None
    batch_sizes: tuple[int, ...] = ()
    max_steps: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        lr, steps = self.learning_rate, self.max_steps
        if lr is not None and not (0 < lr[0] < lr[1] <= MAX_LEARNING_RATE):
            raise ValueError(f"learning_rate range {lr} must be 0 < low < high <= {MAX_LEARNING_RATE}")
        if any(int(b) != b or b < 1 for b in self.batch_sizes):
            raise ValueError(f"batch_sizes {self.batch_sizes} must be positive integers")
        if steps is not None and not (1 <= steps[0] <= steps[1]):
            raise ValueError(f"max_steps range {steps} must be 1 <= low <= high")


def task_hints(task: Task) -> TaskHints:
    """The task's hints; none for a task that declares no `hints` (the protocol does not
    require them)."""
    hints = getattr(task, "hints", None)
    return hints if isinstance(hints, TaskHints) else TaskHints()


@runtime_checkable
class Task(Protocol):
    name: str
    capability: str  # the target capability in words (goes into the task contract)
    template: str  # prompt template; render() fills it
    decoding: Decoding
    stop: tuple[str, ...]

    def render(self, question: str) -> str: ...

    def generators(self) -> dict[str, GeneratorFamily]: ...

    def eval_items(self, split: Split) -> list[EvalItem]: ...

    def score(self, item: EvalItem, output: str) -> Score: ...

    def reward(self, example: dict[str, Any], output: str) -> float: ...

    def pretrain_text(self, seed: int, n: int) -> list[str]: ...
