"""Directions: what a Worker explores. A recipe family of the task (a generator family
and a training method), the ranges of its knobs, and where training starts from.

A direction is persisted as the `direction` of a `worker.add` event, so a run can be
rebuilt (and resumed) from its ledger alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..landscape import CURVE_BATCH, Curve, CurveLabel, LabelError
from ..tasks import task_hints
from ._seeds import family_seed

if TYPE_CHECKING:
    from ..tasks import Task

__all__ = [
    "DEFAULT_TRAIN",
    "OPENING_TRIAL",
    "Direction",
    "Range",
    "default_directions",
    "grpo_batch_problem",
    "knob_ranges",
    "opening_batch",
    "opening_curve",
    "subset_direction",
    "within_ranges",
]


class Range(BaseModel):
    """One searchable parameter: an int/float interval, a set of choices, or a fixed value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = Field(pattern="^(int|float|choice|fixed)$")
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: list[Any] = Field(default_factory=list)
    value: Any = None


class Direction(BaseModel):
    """A Worker's assignment, structured so that a programmatic policy can execute it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    agent: str = Field(default="tpe", description="Registered Worker implementation that executes it.")
    family: str = Field(description="Generator family of the task.")
    method: str = Field(default="sft", description="Training method.")
    knobs: dict[str, Range] = Field(default_factory=dict, description="Generator knobs searched or fixed.")
    train: dict[str, Range] = Field(default_factory=dict, description="Training parameters searched or fixed.")
    parent: str = Field(default="base", description="`base` or a verified experiment to continue from.")
    mix: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Extra fixed data sources [{family, params}] mixed in "
        "(a branch that combines other Workers' findings).",
    )
    trials: int = Field(default=6, ge=1, description="Most experiments the Worker starts.")
    seconds: float = Field(default=120.0, gt=0, description="Wall-clock allowance of the Worker.")
    seed: int = Field(default=0, ge=0)
    enqueue: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Trials to try first (the evaluation distribution's knobs for a fresh "
        "direction, verified recipes of predecessors for a continuation).",
    )

    subset: str = Field(
        default="",
        description="A data selection the landscape measured, `knob=value,...` as its "
        "curve names it (`ops=add`: additions only); the knobs are fixed "
        "to it in `knobs`. Part of the direction's identity.",
    )

    @field_validator("subset")
    @classmethod
    def _selection(cls, subset: str) -> str:
        if subset:
            try:
                CurveLabel.of_selection("family", subset)
            except LabelError as exc:
                raise ValueError(
                    f"subset {subset!r} is not a data selection as a curve label writes it: {exc}"
                ) from None
        return subset

    def curve_label(self) -> CurveLabel:
        """The landscape curve of the recipe: its family on its data selection (full SFT, batch 8).
        The selection is kept verbatim: values re-formatted after a JSON round trip (0.0 -> 0)
        would no longer name the curve, nor the budget share the direction already took."""
        return CurveLabel.of_selection(self.family, self.subset)

    def label(self) -> str:
        """The recipe family as the landscape's curves name it: `family` or `family[knob=value,...]`."""
        return str(self.curve_label())

    def key(self) -> str:
        """The direction's identity for budget shares: the recipe family (with its data selection)."""
        return (
            f"{self.label()}+{'+'.join(sorted(m['family'] for m in self.mix))}:{self.method}"
            if self.mix
            else f"{self.label()}:{self.method}"
        )


# Generic defaults for a small model's SFT, not tuned per task. The measured landscape of the
# built-in suite (docs/tasks.md) shows small batches and more optimizer steps winning at fixed
# compute and scores still rising at 5 default experiments, so trials ask for 100-3,000 steps
# at batch 2-8 and the Worker fits each one into its time left.
#
# Every trial holds its peak rate and anneals over its last fifth (warmup_stable_decay). A
# lineage is a chain of trials, and with a cosine schedule each of them spends half its steps
# at a decayed rate, so that a chain learns far less than one run (docs/tasks.md, "Lineages").
DEFAULT_TRAIN: dict[str, Range] = {
    "learning_rate": Range(kind="float", low=5e-4, high=3e-3, log=True),
    "batch_size": Range(kind="choice", choices=[2, 4, 8]),
    "max_steps": Range(kind="int", low=100, high=3000),
    "lr_scheduler": Range(kind="fixed", value="warmup_stable_decay"),
}

# A fresh direction's first trial: lr 1e-3 at batch 2, as long as the Worker's allowance fits
# (a prior's curves may move it to their batch: `opening_batch`). TPE's startup draws had
# trained the opening Workers at 6e-4 with batch 16.
OPENING_TRIAL: dict[str, Any] = {"t:learning_rate": 1e-3, "t:batch_size": 2, "t:max_steps": 3000}
LANDSCAPE_TRIAL = OPENING_TRIAL  # its former name
OPENING_HORIZON = 2.0  # default experiments: a 5-minute campaign's lineages train 0.6-1x, its Workers 2-3x in all


def opening_batch(label: str, curves: dict[str, Curve]) -> int:
    """A fresh direction's first batch size: batch 2 (`OPENING_TRIAL`), unless the prior's landscape
    measured the recipe (`label`) at batch 2 as well as at batch 8 and the batch-2 curve is
    behind on average over their shared points up to `OPENING_HORIZON` default experiments.

    Small batches are not better for every family (docs/tasks.md, "Families differ
    structurally": on the built-in suite batch 2 holds one family back and brings another's
    turn earlier). A data selection (`family[knob=value]`) without a batch-2 curve of its own opens at
    its family's batch; a recipe without any (every recipe, without a prior) opens at 2."""
    small = int(OPENING_TRIAL["t:batch_size"])
    parsed = CurveLabel.parse(label)
    a, b = curves.get(str(parsed.at_batch(small))), curves.get(label)
    if not a and parsed.knobs:
        # A data selection not measured at batch 2 opens at its family's batch: the batch
        # decides how fast the format is learned, whatever part of the distribution it is fed.
        return opening_batch(parsed.family, curves)
    if not a or not b:
        return small
    shared = {p.multiple for p in a.points} & {p.multiple for p in b.points}
    shared = {m for m in shared if m <= OPENING_HORIZON}
    if not shared:
        return small
    return small if a.mean_over(shared) >= b.mean_over(shared) else CURVE_BATCH


def opening_curve(d: Direction) -> str:
    """The landscape curve that describes a fresh direction's opening: its label, at the batch
    its first trial runs (`label@bN` where the landscape measured that batch, else the
    batch-8 curve, the closest measurement there is)."""
    batch = next((int(r["t:batch_size"]) for r in d.enqueue if "t:batch_size" in r), CURVE_BATCH)
    return str(d.curve_label().at_batch(batch))


def knob_ranges(task: Task, family: str) -> dict[str, Range]:
    """Every knob of a generator family as a search range (from the task's own declaration)."""
    out: dict[str, Range] = {}
    for k in task.generators()[family].knobs:
        if k.kind == "int":
            out[k.name] = Range(kind="int", low=k.low, high=k.high)
        elif k.kind == "float":
            out[k.name] = Range(kind="float", low=k.low, high=k.high)
        else:
            out[k.name] = Range(kind="choice", choices=list(k.choices))
    return out


def default_directions(task: Task, *, seed: int = 0, curves: dict[str, Curve] | None = None) -> list[Direction]:
    """One direction per generator family and training method it declares (`methods`: SFT
    alone for a hand-written generator), knobs around their evaluation defaults.

    Knob ranges are narrowed to the defaults for knobs that set the evaluation
    distribution's shape (the eval items use the defaults), so that a Worker searches
    diversity and format rather than drifting off-distribution; the others are searched.
    The first trial is the evaluation distribution itself (every searched knob at its
    default) at the opening rate and batch (`OPENING_TRIAL`; with a prior's `curves`, at the
    batch size `opening_batch` picks from them), and TPE explores around it from there: a
    short campaign runs two or three trials per Worker, all of them random otherwise.
    """

    t = task
    curves = curves or {}
    hinted = task_train(task_hints(t))
    out = []
    for i, (family, gen) in enumerate(sorted(t.generators().items())):
        knobs: dict[str, Range] = {}
        for k in gen.knobs:
            if k.kind == "choice":
                knobs[k.name] = Range(kind="choice", choices=list(k.choices))
            elif k.kind == "int" and k.low is not None and k.high is not None:
                # Search at most one step around the default: wider moves leave the eval distribution.
                lo, hi = max(int(k.low), int(k.default) - 1), min(int(k.high), int(k.default) + 1)
                knobs[k.name] = Range(kind="int", low=lo, high=hi) if lo < hi else Range(kind="fixed", value=k.default)
            elif k.kind == "float" and k.low is not None and k.high is not None:
                knobs[k.name] = Range(kind="float", low=float(k.low), high=float(k.high))
            else:
                knobs[k.name] = Range(kind="fixed", value=k.default)
        first = {f"k:{k.name}": k.default for k in gen.knobs if knobs[k.name].kind != "fixed"} | OPENING_TRIAL
        first["t:batch_size"] = opening_batch(family, curves)
        if hinted:
            first.update(_middle(hinted))
        for method in gen.methods:  # one direction per method the family's rows are made for
            train = {**DEFAULT_TRAIN, **hinted, **METHOD_TRAIN.get(method, {})}
            out.append(
                Direction(
                    family=family,
                    method=method,
                    knobs=knobs,
                    train=train,
                    seed=family_seed(seed, i),
                    enqueue=[within_ranges(first, train)] if first else [],
                )
            )
    return out


def task_train(hints: Any) -> dict[str, Range]:
    """The training ranges a task's hints declare (`TaskHints.learning_rate`, `batch_sizes`,
    `max_steps`), as the ranges that replace `DEFAULT_TRAIN`'s; empty for a task that declares none."""
    out: dict[str, Range] = {}
    if hints.learning_rate is not None:
        lo, hi = hints.learning_rate
        out["learning_rate"] = Range(kind="float", low=float(lo), high=float(hi), log=True)
    if hints.batch_sizes:
        out["batch_size"] = Range(kind="choice", choices=sorted({int(b) for b in hints.batch_sizes}))
    if hints.max_steps is not None:
        lo, hi = hints.max_steps
        out["max_steps"] = Range(kind="int", low=int(lo), high=int(hi))
    return out


def _middle(train: dict[str, Range]) -> dict[str, Any]:
    """The first trial in the middle of a task's declared ranges (geometric for the learning
    rate, the middle choice of batch size, the most steps): nothing else is known before it."""
    out: dict[str, Any] = {}
    lr, batch, steps = train.get("learning_rate"), train.get("batch_size"), train.get("max_steps")
    if lr is not None and lr.low is not None and lr.high is not None:
        out["t:learning_rate"] = float((lr.low * lr.high) ** 0.5)
    if batch is not None and batch.choices:
        out["t:batch_size"] = sorted(batch.choices)[len(batch.choices) // 2]
    if steps is not None and steps.high is not None:
        out["t:max_steps"] = int(steps.high)
    return out


# What a method searches beyond DEFAULT_TRAIN. GRPO's batch must be a multiple of its
# completions per prompt (TrainSpec), and a GRPO step generates a group per prompt, so it
# takes far fewer steps in the same time; LoRA's rank is its own capacity knob.
METHOD_TRAIN: dict[str, dict[str, Range]] = {
    "lora": {"lora_r": Range(kind="choice", choices=[4, 8, 16, 32])},
    "dpo": {"dpo_beta": Range(kind="float", low=0.05, high=0.5, log=True)},
    "grpo": {
        "batch_size": Range(kind="choice", choices=[4, 8]),
        "grpo_num_generations": Range(kind="fixed", value=4),
        "max_steps": Range(kind="int", low=10, high=300),
    },
}


def grpo_batch_problem(train: dict[str, Range]) -> str | None:
    """Why a GRPO direction's training ranges can draw a batch that is no multiple of its
    completions per prompt (TrainSpec refuses such a trial, so every one would fail), or None."""
    from ..runtime import TrainSpec

    def values(name: str) -> list[int] | None:
        r = train.get(name)
        if r is None:
            return [int(TrainSpec.model_fields[name].default)]
        if r.kind == "fixed":
            return [int(r.value)]
        if r.kind == "choice":
            return [int(c) for c in r.choices]
        if r.kind == "int" and r.low is not None and r.high is not None and r.high - r.low <= 1024:
            return list(range(int(r.low), int(r.high) + 1))
        return None

    batches, generations = values("batch_size"), values("grpo_num_generations")
    if batches is None or generations is None:
        return "grpo needs batch_size and grpo_num_generations as fixed values, choices or a short int range"
    bad = sorted({b for b in batches for g in generations if g <= 0 or b % g})
    if not bad:
        return None
    return (
        f"grpo batch_size must be a multiple of grpo_num_generations ({', '.join(map(str, sorted(set(generations))))}); "
        f"batch sizes {bad} are not: give batch_size choices that are"
    )


def within_ranges(trial: dict[str, Any], train: dict[str, Range]) -> dict[str, Any]:
    """An enqueued first trial moved inside a method's training ranges (a value outside its
    distribution is no trial the search can tell)."""
    out = {}
    for name, value in trial.items():
        r = train.get(name[2:]) if name.startswith("t:") else None
        if r is None:
            out[name] = value
        elif r.kind == "choice":
            out[name] = value if value in r.choices else min(r.choices, key=lambda c: abs(c - value))
        elif r.kind in ("int", "float"):
            out[name] = min(max(value, r.low), r.high)
    return out


def subset_direction(
    task: Task, label: str, families: list[Direction], curves: dict[str, Curve] | None = None
) -> Direction | None:
    """The direction of a landscape curve labelled `family[knob=value,...]`: that family's
    direction among `families` (`default_directions`) with those knobs fixed, a data
    selection (`family[ops=add]`: a family's items of one kind only). None for a label
    that is not one: a plain family, another training method (`+lora`), an unknown family
    or knob, or a value outside the knob's declared range."""
    try:
        parsed = CurveLabel.parse(label)
    except LabelError:
        return None
    if not parsed.knobs or parsed.method != "sft" or parsed.prompt_loss or parsed.batch != CURVE_BATCH:
        return None
    family = parsed.family
    base = next((d for d in families if d.family == family), None)
    if base is None:
        return None
    declared = {k.name: k for k in task.generators()[family].knobs}
    subset: dict[str, Any] = {}
    for name, raw in parsed.knobs:
        k = declared.get(name)
        if k is None:
            return None
        value: Any
        try:
            if k.kind == "int":
                value = int(raw)
            elif k.kind == "float":
                value = float(raw)
            else:
                value = next(c for c in k.choices if str(c) == raw.strip())
        except (ValueError, StopIteration):
            return None
        if k.kind != "choice" and ((k.low is not None and value < k.low) or (k.high is not None and value > k.high)):
            return None
        subset[k.name] = value
    knobs = {**base.knobs, **{k: Range(kind="fixed", value=v) for k, v in subset.items()}}
    batch = opening_batch(label, curves or {})  # the selection's own curves, not the family's
    enqueue = [
        {n: (batch if n == "t:batch_size" else v) for n, v in rec.items() if n[2:] not in subset}
        for rec in base.enqueue
    ]
    return base.model_copy(update={"knobs": knobs, "subset": parsed.selection, "enqueue": [e for e in enqueue if e]})
