"""Typed messages between agents: what a Worker's best experiment did (`Recipe`), what a
Reviewer found (`Finding`) and recommends (`Recommendation`), and its `Verdict`.

They travel inside the `worker.finalize` and `review.submit` payloads and are the input
schemas of those tools, so an LLM agent (and an MCP client) is handed the same types a
programmatic agent writes. Code reads their fields; the prose beside them (a Worker's
summary, a recommendation's `reason`, `text()`) is for people and LLM agents, and nothing
parses it back.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._limits import LIST_MAX, JsonObject, Name, Text

__all__ = [
    "Combine",
    "Continue",
    "Finding",
    "FindingKind",
    "Hyperparameters",
    "Recipe",
    "Recommendation",
    "Revise",
    "Significance",
    "Source",
    "Stop",
    "Verdict",
    "named_ids",
]

Verdict = Literal["pass", "fail"]
"""A review's verdict: `pass` when the scope's conclusions hold on the evidence."""


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Source(_Message):
    """A fixed extra data source mixed into a Worker's data (a branch that combines findings)."""

    family: Name = Field(description="Generator family of the task.")
    params: JsonObject = Field(default_factory=dict, description="Its generator knobs, fixed.")


class Hyperparameters(_Message):
    """The training parameters of the experiment a recipe names (null: not set, the default ran)."""

    learning_rate: float | None = Field(default=None, description="Peak learning rate.")
    batch_size: int | None = Field(default=None, description="Examples per optimizer step.")
    max_steps: int | None = Field(default=None, description="Optimizer steps asked for.")


class Recipe(_Message):
    """What a Worker's best experiment did, so that another Worker can continue or mix it. A
    claim like any other of the Worker's: the Main builds only on recipes of Workers a
    passing review covered."""

    experiment_id: Name = Field(description="The experiment the recipe describes (the Worker's best).")
    family: Name = Field(description="Generator family of its data (the direction).")
    method: Name = Field(default="sft", description="Training method.")
    params: JsonObject = Field(default_factory=dict, description="Generator knobs its data was made with.")
    mix: list[Source] = Field(
        default_factory=list, max_length=LIST_MAX, description="Extra fixed data sources mixed into its data."
    )
    config: Hyperparameters = Field(default_factory=Hyperparameters, description="Its training parameters.")
    parent: Name = Field(default="base", description="`base` or the experiment it continued from.")
    dev_score: float | None = Field(default=None, description="Its recorded `dev` score.")

    @field_validator("dev_score")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise ValueError("dev_score must be a finite number or null")
        return v


class Significance(_Message):
    """A test a finding or recommendation rests on: the measured effect, the noise it is compared
    with, and the one-sided p of the effect under the null (no complementarity, no gain, an
    honest claim)."""

    test: Literal["complementarity", "gain", "claim"] = Field(
        description="complementarity: items only the second checkpoint solves, against what the two scores predict "
        "under independence within strata of item difficulty (summed hypergeometric overlaps); gain: a checkpoint's score over what it was trained from (paired on "
        "items where both were scored); claim: a claimed score over a fresh measurement of it."
    )
    effect: float = Field(
        description="Observed minus what the null predicts: items for complementarity, score for gain and claim."
    )
    noise: float = Field(ge=0, description="Standard error of the effect under the null, in the effect's unit.")
    p: float = Field(ge=0, le=1, description="One-sided p value of an effect at least this large under the null.")
    n: int = Field(ge=0, description="Evaluation items the test ran on.")
    reference: Name | None = Field(
        default=None, description="What the effect is measured against: an experiment id, `base`, or a split."
    )


FindingKind = Literal["claim", "score", "gap", "gain", "regression", "comparison", "audit", "coverage", "nothing"]
"""What a finding checked: a Worker's claim, a candidate's `review` score, a dev/review gap, a
lineage's last step (gain or regression), a comparison of two Workers' candidates, the integrity
audit, what could not be checked (`coverage`), or nothing to act on (`nothing`)."""


class Finding(_Message):
    """One checked statement of a review, with the records it rests on."""

    claim: Text = Field(min_length=1, description="What was checked, in words.")
    status: Literal["supported", "unsupported", "uncertain"] = Field(
        description="supported: the records bear it out; unsupported: they contradict it; uncertain: they leave "
        "it open."
    )
    experiment_ids: list[Name] = Field(
        default_factory=list, max_length=LIST_MAX, description="Experiments it is about."
    )
    worker_ids: list[Name] = Field(default_factory=list, max_length=LIST_MAX, description="Workers it is about.")
    evidence: list[int] = Field(
        default_factory=list, max_length=LIST_MAX, description="Ledger seqs it rests on (evaluation records)."
    )
    split: Literal["dev", "review"] | None = Field(default=None, description="Split of the score below, if any.")
    score: float | None = Field(default=None, description="The score the records show, if it is about one.")
    kind: FindingKind | None = Field(default=None, description="What was checked (absent in schema v1/v2 records).")
    significance: Significance | None = Field(
        default=None, description="The test it rests on, if any (absent in schema v1/v2 records)."
    )


class Continue(_Message):
    """Train this checkpoint further (a critique of the leader that more training answers)."""

    action: Literal["continue"] = Field(description="What to do: `continue`.")
    experiment_id: Name = Field(description="The checkpoint to continue from.")
    worker_id: Name = Field(description="The Worker whose candidate it is.")
    reason: Text = Field(min_length=1, description="Why, in words.")
    significance: Significance | None = Field(
        default=None,
        description="The gain of the checkpoint's last step over the evaluation noise (absent: untested, as in "
        "schema v1/v2 records).",
    )

    def text(self) -> str:
        return f"continue {self.experiment_id} {self.worker_id}: {self.reason}"


class Combine(_Message):
    """Mix the verified recipes of two complementary Workers, starting from the first one's."""

    action: Literal["combine"] = Field(description="What to do: `combine`.")
    worker_ids: list[Name] = Field(min_length=2, max_length=2, description="The two Workers, the leader first.")
    experiment_ids: list[Name] = Field(
        default_factory=list, max_length=LIST_MAX, description="Their checkpoints compared."
    )
    reason: Text = Field(min_length=1, description="Why, in words (what each solves that the other misses).")
    significance: Significance | None = Field(
        default=None,
        description="The complementarity test on the two checkpoints' per-sample outcomes (absent: untested, as in "
        "schema v1/v2 records).",
    )

    def text(self) -> str:
        return f"combine {' '.join(self.worker_ids)}: {self.reason}"


class Revise(_Message):
    """Redo this Worker's direction from the base model on fresh data: its claims did not hold."""

    action: Literal["revise"] = Field(description="What to do: `revise`.")
    worker_id: Name = Field(description="The Worker whose direction to redo.")
    experiment_ids: list[Name] = Field(
        default_factory=list, max_length=LIST_MAX, description="Its experiments the critique is about."
    )
    reason: Text = Field(min_length=1, description="Why, in words.")

    def text(self) -> str:
        return f"revise {self.worker_id}: {self.reason}"


class Stop(_Message):
    """Train these no further (a dead end, or a checkpoint that must not be built on)."""

    action: Literal["stop"] = Field(description="What to do: `stop`.")
    experiment_ids: list[Name] = Field(
        default_factory=list, max_length=LIST_MAX, description="Checkpoints not to continue."
    )
    worker_ids: list[Name] = Field(
        default_factory=list, max_length=LIST_MAX, description="Workers whose lineages not to continue."
    )
    reason: Text = Field(min_length=1, description="Why, in words.")

    def text(self) -> str:
        return f"stop {' '.join([*self.experiment_ids, *self.worker_ids])}: {self.reason}"


Recommendation = Annotated[Continue | Combine | Revise | Stop, Field(discriminator="action")]
"""What a Reviewer recommends the Main do next, one of four actions, each naming its ids."""


def named_ids(m: Finding | Continue | Combine | Revise | Stop) -> tuple[set[str], set[str]]:
    """(experiment ids, Worker ids) a finding or recommendation is about."""
    if isinstance(m, Continue):
        return {m.experiment_id}, {m.worker_id}
    if isinstance(m, Revise):
        return set(m.experiment_ids), {m.worker_id}
    return set(m.experiment_ids), set(m.worker_ids)
