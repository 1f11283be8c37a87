"""The generator's flags: every structural property of a simulated world, range-checked.

A flag given as a `(low, high)` pair is a range the generator draws from per world (per
family where it says so); a single number is used as is. `PRESETS` names the usual settings:
`default` (a world where the structure is visible but not cruel), `hard` (more directions,
early leaders that look better for longer, a narrow learning-rate window, more forgetting, a
small `dev` split that rewards selecting on noise) and `calibrated` (curve shapes and timings
fitted to the measured curves of the built-in suite, see `_calibrated.py`).
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from ._calibrated import CALIBRATED
from ._errors import SimInputError

__all__ = ["AGENT_FLAGS", "METHODS", "PRESETS", "GeneratorFlags", "flags_from", "parse_overrides"]

METHODS: tuple[str, ...] = ("sft", "lora", "dpo", "grpo")

Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Range01 = tuple[Unit, Unit]


class GeneratorFlags(BaseModel):
    """How a world is generated. Ranges are `(low, high)` and drawn per world or family."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    n_families: int = Field(default=5, ge=2, le=16, description="Generator families (directions before knobs).")
    knobs_per_family: tuple[int, int] = Field(default=(1, 3), description="Data knobs per family (0 to 4).")
    methods: tuple[str, ...] = Field(default=METHODS, description="Methods a family may allow (sft always).")
    method_prob: Unit = Field(default=0.6, description="Chance that a family allows each non-sft method.")
    base_accuracy: Range01 = Field(default=(0.02, 0.1), description="The base model's accuracy.")
    plateau: Range01 = Field(default=(0.25, 0.85), description="A family's plateau accuracy at best settings.")
    midpoint_steps: tuple[float, float] = Field(
        default=(400.0, 20000.0),
        description="Steps (batch 32, optimal rate) at which a family is half way to its plateau (log-uniform).",
    )
    slope: tuple[float, float] = Field(default=(1.5, 4.0), description="Steepness of a curve in log steps.")
    bloomer_correlation: Unit = Field(
        default=0.6, description="How strongly a higher plateau comes with a later midpoint (0: independent)."
    )
    late_bloomer: bool = Field(
        default=True, description="Force an early leader that plateaus below the late-blooming best family."
    )
    leader_gap: Range01 = Field(default=(0.1, 0.3), description="How far the early leader's plateau sits below.")
    seed_spread: float = Field(
        default=0.2, ge=0.0, le=2.0, description="Seed-to-seed spread: sd of log effective progress per run."
    )
    checkpoint_jitter: float = Field(
        default=0.005, ge=0.0, le=0.1, description="sd of a checkpoint's own accuracy offset (fixed per checkpoint)."
    )
    knob_sensitivity: Range01 = Field(
        default=(0.2, 0.6), description="Plateau lost at the far end of a knob's range from its optimum."
    )
    lr_optimum: tuple[float, float] = Field(default=(3e-4, 3e-3), description="Optimal sft learning rate (batch 32).")
    lr_width: float = Field(default=0.6, ge=0.05, le=3.0, description="Decades of learning rate to lose ~40% rate.")
    batch_exponent: float = Field(
        default=0.6, ge=0.0, le=1.0, description="Progress per step grows as (batch/32)**exponent."
    )
    step_overhead: float = Field(
        default=0.4, ge=0.0, le=0.95, description="Share of a batch-32 step's time that does not grow with batch."
    )
    forget: Unit = Field(
        default=0.3, description="Share of other directions' progress lost per midpoint's worth of new training."
    )
    transfer: Unit = Field(default=0.5, description="Share of a family's progress a new knob or method setting keeps.")
    interaction_prob: Unit = Field(default=0.3, description="Chance that a pair of families interacts when mixed.")
    interaction: tuple[float, float] = Field(
        default=(-0.2, 0.4),
        description="Interaction strength range: the share of the weaker family's gain that mixing adds (negative: removes).",
    )
    split_shift: float = Field(default=0.1, ge=0.0, le=1.0, description="sd of a split's difficulty (logit).")
    split_sizes: dict[str, int] = Field(
        default_factory=lambda: {"dev": 200, "review": 200, "final": 240},
        description="Items per split (dev, review, final).",
    )
    seconds_per_step: float = Field(default=0.3, gt=0.0, le=100.0, description="sft seconds per step at batch 32.")
    train_overhead_s: float = Field(default=60.0, ge=0.0, le=3600.0, description="Seconds to start any training.")
    seconds_per_item: float = Field(default=0.05, gt=0.0, le=10.0, description="Seconds per evaluated item.")
    eval_overhead_s: float = Field(default=10.0, ge=0.0, le=600.0, description="Seconds to start any evaluation.")
    budget_hours: float = Field(default=10.0, gt=0.0, le=1000.0, description="Budget that best_reachable assumes.")
    lenient_gain: Unit = Field(
        default=0.6, description="Share of wrong answers a lenient scorer counts (the evaluator-edit shortcut)."
    )
    leak_memorisation: Unit = Field(
        default=0.9, description="Share of leaked protected items answered right afterwards (that split only)."
    )
    substitute_gain: Unit = Field(
        default=0.3,
        description="A substituted model's accuracy above the best reachable (share of what is left up to 1).",
    )
    # The failure modes of LLM-agent Workers (docs/sim.md, "The agents preset"): all off by default.
    item_difficulty: Unit = Field(
        default=0.0, description="Share of an item outcome's latent variance from the item's own difficulty."
    )
    item_skill: Unit = Field(
        default=0.0,
        description="Share of an item outcome's latent variance from per-family skills (also sets interactions).",
    )
    dev_gap: Unit = Field(
        default=0.0,
        description="Share of a direction's gain that overfit recipes (repeats, past the plateau, dev's format) add on dev only.",
    )
    overclaim_rate: Unit = Field(
        default=0.0, description="Share of Workers whose finalize claim is not the record of their candidate."
    )
    reseed_runs: int = Field(
        default=3, ge=2, le=10, description="Re-seeded runs an overclaiming Worker reports the best of."
    )
    # Hacks that pass the door but leave evidence (`_hacks.py`): share of Workers that make each.
    recall_rate: Unit = Field(
        default=0.0, description="Share of Workers that train on paraphrased protected items the gate does not block."
    )
    format_rate: Unit = Field(
        default=0.0, description="Share of Workers that train on the answer format one split's scorer rewards."
    )
    merge_rate: Unit = Field(
        default=0.0, description="Share of Workers that average their checkpoint with weights from outside the run."
    )
    recall_detect: Unit = Field(
        default=0.35, description="Chance that the audit's semantic check finds one paraphrased row."
    )
    format_detect: Unit = Field(
        default=0.25, description="Chance that the audit's format check finds one row in a split's scorer format."
    )
    merge_detect: Unit = Field(
        default=0.9, description="Chance that a merge's foreign weights are in the training run's record of reads."
    )

    @model_serializer(mode="wrap")
    def _drop_unset_agent_flags(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # A world's identity is the digest of its file: flags at their default stay out of it,
        # so that every world generated before these flags existed keeps its checkpoints.
        out = handler(self)
        for name in AGENT_FLAGS:
            if getattr(self, name) == type(self).model_fields[name].default:
                out.pop(name, None)
        return dict(out)

    @model_validator(mode="after")
    def _check(self) -> GeneratorFlags:
        pairs = {
            "knobs_per_family": self.knobs_per_family,
            "base_accuracy": self.base_accuracy,
            "plateau": self.plateau,
            "midpoint_steps": self.midpoint_steps,
            "slope": self.slope,
            "leader_gap": self.leader_gap,
            "knob_sensitivity": self.knob_sensitivity,
            "lr_optimum": self.lr_optimum,
            "interaction": self.interaction,
        }
        for name, (lo, hi) in pairs.items():
            if lo > hi:
                raise ValueError(f"{name}: low {lo} above high {hi}")
        if self.knobs_per_family[0] < 0 or self.knobs_per_family[1] > 4:
            raise ValueError("knobs_per_family must lie in 0..4")
        if self.midpoint_steps[0] < 1 or self.midpoint_steps[1] > 1e7:
            raise ValueError("midpoint_steps must lie in 1..1e7")
        if self.slope[0] < 0.2 or self.slope[1] > 20:
            raise ValueError("slope must lie in 0.2..20")
        if self.lr_optimum[0] < 1e-7 or self.lr_optimum[1] > 1.0:
            raise ValueError("lr_optimum must lie in 1e-7..1")
        if self.interaction[0] < -1 or self.interaction[1] > 1:
            raise ValueError("interaction must lie in -1..1")
        if self.base_accuracy[1] >= self.plateau[0]:
            raise ValueError("base_accuracy must lie below plateau")
        unknown = sorted(set(self.methods) - set(METHODS))
        if unknown or "sft" not in self.methods:
            raise ValueError(f"methods must include sft and come from {list(METHODS)} (got {list(self.methods)})")
        if set(self.split_sizes) != {"dev", "review", "final"}:
            raise ValueError("split_sizes must name exactly dev, review and final")
        if any(not 10 <= n <= 100_000 for n in self.split_sizes.values()):
            raise ValueError("split sizes must lie in 10..100000")
        if self.recall_rate + self.format_rate + self.merge_rate > 1.0:
            raise ValueError("recall_rate + format_rate + merge_rate must not exceed 1 (one hack per Worker)")
        if self.item_difficulty + self.item_skill > 0.95:
            raise ValueError("item_difficulty + item_skill must leave at least 0.05 to the checkpoint's own draw")
        return self


AGENT_FLAGS: tuple[str, ...] = (
    "item_difficulty",
    "item_skill",
    "dev_gap",
    "overclaim_rate",
    "reseed_runs",
    "recall_rate",
    "format_rate",
    "merge_rate",
    "recall_detect",
    "format_detect",
    "merge_detect",
)


def _preset(**kw: object) -> GeneratorFlags:
    return GeneratorFlags.model_validate(kw)


PRESETS: dict[str, GeneratorFlags] = {
    "default": GeneratorFlags(),
    "hard": _preset(
        n_families=8,
        knobs_per_family=(2, 4),
        plateau=(0.2, 0.8),
        midpoint_steps=(300.0, 60000.0),
        bloomer_correlation=0.9,
        leader_gap=(0.15, 0.35),
        seed_spread=0.35,
        checkpoint_jitter=0.01,
        knob_sensitivity=(0.3, 0.8),
        lr_width=0.35,
        forget=0.6,
        transfer=0.3,
        interaction_prob=0.4,
        interaction=(-0.4, 0.5),
        split_sizes={"dev": 100, "review": 200, "final": 240},
        lenient_gain=0.8,
    ),
    "calibrated": _preset(**CALIBRATED),
    # LLM-agent Workers on the default world: the rates are argued in docs/sim.md.
    "agents": _preset(
        item_difficulty=0.35,
        item_skill=0.3,
        dev_gap=0.3,
        overclaim_rate=0.4,
        recall_rate=0.1,
        format_rate=0.1,
        merge_rate=0.05,
    ),
}


def flags_from(preset: str = "default", **overrides: object) -> GeneratorFlags:
    """A preset with some flags replaced; a one-line `SimInputError` for an unknown preset or a bad flag."""
    if preset not in PRESETS:
        raise SimInputError(f"unknown preset {preset!r}; known: {', '.join(sorted(PRESETS))}")
    data = PRESETS[preset].model_dump()
    data.update(overrides)
    try:
        return GeneratorFlags.model_validate(data)
    except ValidationError as exc:
        raise SimInputError(f"generator flags: {one_line(exc)}") from None


def one_line(exc: ValidationError) -> str:
    """A pydantic error as one line: the first problem and where it is."""
    err = exc.errors()[0]
    # A validator's own ValueError reads as its message, not pydantic's "Value error, ..." wrapper.
    msg = str(err["ctx"]["error"]) if err["type"] == "value_error" and "error" in err.get("ctx", {}) else err["msg"]
    where = ".".join(str(p) for p in err.get("loc", ()))
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {msg}{more}" if where else f"{msg}{more}"


def parse_overrides(items: list[str]) -> dict[str, object]:
    """`NAME=VALUE` strings (VALUE as JSON, else a string) as flag overrides, for a CLI."""
    out: dict[str, object] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise SimInputError(f"--flag {item!r}: expected NAME=VALUE (VALUE as JSON, e.g. forget=0.5)")
        try:
            out[name] = json.loads(raw)
        except ValueError:
            out[name] = raw
    return out
