"""The landscape file as typed records: per task its base and reference scores, its learning
curves (label -> points) and probes, and the targets the measurements were held to.

Every figure comes from the sealed evaluator on the public `dev` split (base and reference
also on `final`); nothing in it is typed by hand (`rsi-master landscape measure` writes it).
"""

from __future__ import annotations

import itertools
import statistics
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._label import CurveLabel

__all__ = [
    "FORMAT_VERSION",
    "Base",
    "Crossing",
    "Curve",
    "DefaultExperiment",
    "FamilyGap",
    "Landscape",
    "Point",
    "Probe",
    "Reference",
    "Targets",
    "TaskLandscape",
    "TaskTargets",
]

FORMAT_VERSION: Final = 2


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Point(_Record):
    """A curve at `multiple` default experiments of data: the mean `dev` score of its seeds."""

    multiple: float = Field(ge=0)
    score: float = Field(ge=0, le=1)
    step: int | None = None
    examples: int | None = None
    seeds: int = Field(default=1, ge=1)
    per_seed: list[float] = Field(default_factory=list)

    @property
    def spread(self) -> float:
        """Highest minus lowest seed's score (0 for a single run)."""
        return max(self.per_seed) - min(self.per_seed) if len(self.per_seed) > 1 else 0.0


class Curve(_Record):
    """One recipe's learning curve (a run with snapshots, averaged over its seeds)."""

    points: list[Point]
    train_seconds: float | None = None
    tokens: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    seeds: list[int] = Field(default_factory=list)

    @property
    def horizon(self) -> float:
        """The last multiple measured (0 for no point)."""
        return max((p.multiple for p in self.points), default=0.0)

    @property
    def spread(self) -> float:
        """The widest seed-to-seed difference at any point."""
        return max((p.spread for p in self.points), default=0.0)

    def score_at(self, multiple: float) -> float:
        """The score at `multiple` default experiments: linear between the points, from 0 at
        0, the last point's score past the horizon."""
        xs = [(0.0, 0.0), *sorted((p.multiple, p.score) for p in self.points)]
        for (x0, y0), (x1, y1) in itertools.pairwise(xs):
            if x0 <= multiple <= x1:
                return y0 + (y1 - y0) * (multiple - x0) / (x1 - x0) if x1 > x0 else y1
        return xs[-1][1]

    def mean_over(self, multiples: set[float]) -> float:
        """The mean score of the points at these multiples."""
        pts = [p.score for p in self.points if p.multiple in multiples]
        return sum(pts) / len(pts)


class Base(_Record):
    score: float | None = None  # dev
    score_dev: float | None = None
    score_final: float | None = None
    checkpoint_digest: str | None = None


class Reference(_Record):
    """The hand-designed reference recipe's scores (what the task can reach here)."""

    score: float
    score_final: float | None = None
    family: str
    spec: dict[str, Any] = Field(default_factory=dict)
    examples: int | None = None
    steps: int | None = None
    compute_multiple: float | None = None
    train_seconds: float | None = None
    checkpoint_digest: str | None = None


class Probe(_Record):
    """One experiment off the curves (another method, rate or schedule, or a continuation)."""

    family: str
    spec: dict[str, Any]
    examples: int
    multiple: float | None = None
    steps: int | None = None
    train_seconds: float | None = None
    tokens: int | None = None
    score: float
    parent: str | None = None


class TaskLandscape(_Record):
    base: Base | None = None
    reference: Reference | None = None
    curves: dict[str, Curve] = Field(default_factory=dict)
    probes: list[Probe] = Field(default_factory=list)

    @field_validator("curves")
    @classmethod
    def _labels(cls, curves: dict[str, Curve]) -> dict[str, Curve]:
        for label in curves:
            if CurveLabel.parse(label).seed:
                raise ValueError(f"curve {label!r}: a landscape's curves are averaged over seeds, no @sS")
        return curves


class FamilyGap(_Record):
    points: float
    multiple: float
    ahead: str
    behind: str


class Crossing(_Record):
    early_leader: str
    overtaken_by: str
    first: float
    last: float
    scores: dict[str, list[float]]


class TaskTargets(_Record):
    base_ok: bool
    reference_gain_points: float | None = None
    reference_ok: bool
    family_gap: FamilyGap | None = None
    family_gap_ok: bool
    crossing: Crossing | None = None


class Targets(_Record):
    tasks: dict[str, TaskTargets] = Field(default_factory=dict)
    crossing_tasks: list[str] = Field(default_factory=list)
    crossing_ok: bool = False


class DefaultExperiment(_Record):
    """The compute unit the curves' multiples count in."""

    examples: int = 5000
    batch_size: int = 32
    learning_rate: float = 1e-3


class Landscape(_Record):
    version: Literal[2] = FORMAT_VERSION
    split: str = "dev"
    default_experiment: DefaultExperiment = Field(default_factory=DefaultExperiment)
    produced_by: str = "rsi-master landscape measure"
    tasks: dict[str, TaskLandscape] = Field(default_factory=dict)
    targets: Targets | None = None

    def curves(self, task: str) -> dict[str, Curve]:
        """A task's curves, label -> curve; empty for a task the landscape has not measured."""
        t = self.tasks.get(task)
        return t.curves if t is not None else {}

    def seconds_per_token(self) -> float | None:
        """The median training seconds per token over every curve: what a default experiment
        of a recipe costs is its tokens times this (each curve's own seconds depend on what
        else ran beside it; its tokens do not)."""
        rates = [
            c.train_seconds / c.tokens
            for t in self.tasks.values()
            for c in t.curves.values()
            if c.train_seconds and c.tokens
        ]
        return statistics.median(rates) if rates else None
