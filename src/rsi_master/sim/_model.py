"""The simulator's records: what a Worker asks for (SimRecipe), what training returns
(SimCheckpoint), what a Task sees of a family (SimFamily, Knob), and the generated parameters a
world file stores (FamilySpec, KnobSpec, MethodSpec)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

__all__ = [
    "FamilySpec",
    "Knob",
    "KnobSpec",
    "MethodSpec",
    "SimCheckpoint",
    "SimFamily",
    "SimRecipe",
]


@dataclass(frozen=True)
class Knob:
    """One tunable parameter of a family: the shape of `rsi_master.tasks.Knob` (sim sits below
    `tasks` in the layers, so it cannot import it; `tasks.Knob(**dataclasses.asdict(k))` converts)."""

    name: str
    kind: Literal["int", "float", "choice"]
    default: Any
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()
    help: str = ""


@dataclass(frozen=True)
class SimFamily:
    name: str
    description: str
    knobs: tuple[Knob, ...]
    methods: tuple[str, ...]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SimRecipe(_Record):
    """One training experiment, as the simulator reads it."""

    family: str = Field(description="The generator family whose data is trained on.")
    knobs: dict[str, int | float | str] = Field(default_factory=dict, description="Family knob values (rest default).")
    method: str = Field(default="sft", description="sft, lora, dpo or grpo (one the family allows).")
    learning_rate: float = Field(gt=0.0, le=10.0)
    batch_size: int = Field(ge=1, le=65536)
    steps: int = Field(ge=1, le=10_000_000)
    rows: int = Field(ge=1, description="Distinct training rows; more steps x batch than rows repeats data.")
    lora_rank: int | None = Field(default=None, ge=1, le=4096)
    epochs: float = Field(default=1, gt=0.0, description="Informational; the repeat count follows from rows.")
    mixture: dict[str, float] = Field(
        default_factory=dict, description="family -> weight when data of several families were mixed."
    )
    leaked: dict[str, int] = Field(
        default_factory=dict, description="split -> protected items in the training data (the shortcut)."
    )
    hacks: dict[str, float] = Field(
        default_factory=dict,
        description="Hacks that pass the door (`_hacks.py`): `recall:SPLIT` items, `format:SPLIT` row share, `merge` weight.",
    )

    @model_serializer(mode="wrap")
    def _drop_no_hacks(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # A recipe's bytes are part of its checkpoint's identity: without hacks they stay what they were.
        out = dict(handler(self))
        if not self.hacks:
            out.pop("hacks", None)
        return out


class SimCheckpoint(_Record):
    """A simulated model state: what a stand-in checkpoint file holds."""

    version: int = 1
    ident: str = Field(description="Unique per training outcome (a digest of world, parent, recipe and seed).")
    progress: dict[str, float] = Field(
        default_factory=dict, description="direction key -> effective steps trained on it (after forgetting)."
    )
    steps_total: int = 0
    leaked: dict[str, int] = Field(default_factory=dict, description="split -> protected items trained on so far.")
    parent: str | None = None
    dev_fit: float = Field(default=0.0, description="dev-only accuracy from memorising repeated data (dev_gap).")
    hacks: dict[str, float] = Field(
        default_factory=dict, description="The door-passing hacks in its lineage (ground truth, as `SimRecipe.hacks`)."
    )

    @model_serializer(mode="wrap")
    def _drop_zero_fit(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # A stand-in checkpoint's bytes (and so its digest) stay what they were without the flags.
        out = dict(handler(self))
        if not self.dev_fit:
            out.pop("dev_fit", None)
        if not self.hacks:
            out.pop("hacks", None)
        return out


class KnobSpec(_Record):
    """A generated knob with its hidden optimum and the cost of straying from it."""

    name: str
    kind: Literal["int", "float", "choice"]
    default: int | float | str
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: list[str] = Field(default_factory=list)
    optimum: int | float | str = Field(description="The best value (numeric knobs: in the knob's own units).")
    sensitivity: float = Field(description="Plateau share lost at the far end from the optimum.")
    choice_penalty: dict[str, float] = Field(default_factory=dict, description="choice -> share of plateau lost.")
    help: str = ""


class FamilySpec(_Record):
    name: str
    description: str
    methods: list[str]
    knobs: list[KnobSpec]
    plateau: float = Field(description="Accuracy it approaches at best knobs, sft, with unlimited training.")
    midpoint: float = Field(description="Effective steps to reach half way from base to plateau.")
    slope: float
    lr_optimum: float = Field(description="Best sft learning rate at batch 32.")


class MethodSpec(_Record):
    plateau: float = Field(description="Multiplier on a family's gain over base.")
    midpoint: float = Field(description="Multiplier on a family's midpoint.")
    seconds: float = Field(description="Multiplier on seconds per step.")
    lr: float = Field(description="Multiplier on the optimal learning rate.")
