"""`task.toml`: the schema of a task directory (pydantic, closed, versioned)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .._protocol import MAX_LEARNING_RATE

__all__ = [
    "CONFIG_VERSION",
    "ChoiceScorer",
    "ExactScorer",
    "FunctionCallScorer",
    "Generation",
    "NumericScorer",
    "PythonScorer",
    "RegexScorer",
    "ScorerConfig",
    "Splits",
    "TaskConfig",
    "Training",
    "UnitTestScorer",
]

CONFIG_VERSION = 1
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
# A file a task names: relative, inside the directory, no hidden or parent parts.
_REL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")


def _rel_path(value: str) -> str:
    if not _REL.fullmatch(value) or ".." in value.split("/"):
        raise ValueError(f"{value!r} is not a relative path inside the task directory")
    return value


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Generation(_Closed):
    max_new_tokens: int = Field(default=256, ge=1, le=32_768)
    stop: list[str] = Field(default_factory=list)
    greedy: bool = True
    temperature: float = Field(default=1.0, gt=0, le=10)
    top_p: float = Field(default=1.0, gt=0, le=1)

    @field_validator("stop")
    @classmethod
    def _no_empty_stop(cls, value: list[str]) -> list[str]:
        if any(not s for s in value):
            raise ValueError("an empty stop string would end every output at once")
        return value


class ExactScorer(_Closed):
    """The output (up to the stop string) equals the answer after normalising case, white space and
    surrounding punctuation; `answer` may be a list of accepted answers."""

    kind: Literal["exact_match"]
    answer_field: str = "answer"
    case_sensitive: bool = False


class NumericScorer(_Closed):
    """The last number in the output equals the answer's last number within `tolerance` (GSM8K)."""

    kind: Literal["numeric"]
    answer_field: str = "answer"
    tolerance: float = Field(default=1e-6, ge=0)


class RegexScorer(_Closed):
    """The last match of `pattern` in the output (its first group, if it has one) equals the answer."""

    kind: Literal["regex"]
    pattern: str
    answer_field: str = "answer"
    case_sensitive: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise ValueError(f"pattern does not compile: {exc}") from None
        if compiled.groups > 1:
            raise ValueError("pattern may have at most one group (the extracted answer)")
        return value


class ChoiceScorer(_Closed):
    """Multiple choice (GPQA): each item's `choices` shown as lettered lines (`{choices}` in the
    template), shuffled per item by a fixed seed; the answer is the index or text of the right one."""

    kind: Literal["multiple_choice"]
    choices_field: str = "choices"
    answer_field: str = "answer"
    shuffle_seed: int | None = 0  # None: keep the file's order


class UnitTestScorer(_Closed):
    """The output is Python code; the item's tests run against it in a sandboxed subprocess."""

    kind: Literal["unit_tests"]
    tests_field: str = "tests"
    prefix_field: str | None = None  # an item field put before the output (HumanEval's signature)
    timeout_s: float = Field(default=3.0, gt=0, le=60)
    memory_mb: int = Field(default=512, ge=64, le=16_384)


class FunctionCallScorer(_Closed):
    """The first JSON object in the output is a call `{"name", "arguments"}` equal to the answer's
    after parsing both (BFCL); the answer may be a list of accepted calls."""

    kind: Literal["function_call"]
    answer_field: str = "call"


class PythonScorer(_Closed):
    """`function(item, output)` from a Python file of the task directory (digested with it); it
    returns a number in [0, 1], a bool, or (score, reason)."""

    kind: Literal["python"]
    path: str = "scorer.py"
    function: str = "score"

    @field_validator("path")
    @classmethod
    def _inside(cls, value: str) -> str:
        return _rel_path(value)

    @field_validator("function")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not value.isidentifier():
            raise ValueError(f"{value!r} is not a Python identifier")
        return value


ScorerConfig = Annotated[
    ExactScorer | NumericScorer | RegexScorer | ChoiceScorer | UnitTestScorer | FunctionCallScorer | PythonScorer,
    Field(discriminator="kind"),
]


class Splits(_Closed):
    dev: str = "dev.jsonl"
    review: str = "review.jsonl"
    final: str = "final.jsonl"
    train: str | None = None  # the pool agents may train on; optional

    @field_validator("dev", "review", "final", "train")
    @classmethod
    def _inside(cls, value: str | None) -> str | None:
        return None if value is None else _rel_path(value)

    @model_validator(mode="after")
    def _distinct(self) -> Splits:
        named = [p for p in (self.dev, self.review, self.final, self.train) if p is not None]
        if len(set(named)) != len(named):
            raise ValueError("each split needs its own file")
        return self


class Training(_Closed):
    """`[training]`: the ranges every direction of the task searches, where the generic
    small-model defaults (learning rate 5e-4 to 3e-3, batch 2 to 8) do not fit your model
    (`tasks.TaskHints`). A fresh direction's first trial is the middle of them; the contract's
    `max_train_steps` still caps a trial. Part of the task's files, so of its digest."""

    learning_rate: list[float] | None = None  # [low, high], searched on a log scale
    batch_sizes: list[int] | None = None  # the choices
    max_steps: list[int] | None = None  # [low, high]

    @field_validator("learning_rate")
    @classmethod
    def _lr(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and not (len(value) == 2 and 0 < value[0] < value[1] <= MAX_LEARNING_RATE):
            raise ValueError(
                f"learning_rate must be [low, high] with 0 < low < high <= {MAX_LEARNING_RATE}, got {list(value)}"
            )
        return value

    @field_validator("batch_sizes")
    @classmethod
    def _batches(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and (
            not value or any(not 1 <= b <= 65_536 for b in value) or len(set(value)) != len(value)
        ):
            raise ValueError(f"batch_sizes must be distinct integers from 1 to 65536, at least one, got {value}")
        return value

    @field_validator("max_steps")
    @classmethod
    def _steps(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and not (len(value) == 2 and 1 <= value[0] <= value[1] <= 10_000_000):
            raise ValueError(f"max_steps must be [low, high] with 1 <= low <= high <= 10000000, got {list(value)}")
        return value


class TaskConfig(_Closed):
    """The whole of `task.toml`."""

    version: Literal[1] = 1
    name: str
    capability: str = Field(min_length=1)
    template: str = Field(min_length=1)
    format: Literal["plain", "chat"] = "plain"
    generation: Generation = Field(default_factory=Generation)
    scorer: ScorerConfig
    splits: Splits = Field(default_factory=Splits)
    training: Training = Field(default_factory=Training)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError("a task name is 1-64 of a-z, 0-9, '_', '.', '-' (starting with a letter or digit)")
        return value
