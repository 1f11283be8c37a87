"""Public tools: what anyone in the run may see."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ._context import ToolContext
from ._generator_view import GeneratorView, generator_views
from ._registry import tool

if TYPE_CHECKING:
    from ._caller import Caller

ALL = ("public", "worker", "reviewer", "main", "harness")


class NoInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContractView(BaseModel):
    task: str
    capability: str
    base_model_digest: str
    evaluator_digest: str
    template_sha256: str
    decoding: dict[str, Any]
    stop: list[str]
    split_sizes: dict[str, int] = Field(description="Number of preregistered samples per split (IDs withheld).")
    allowed_generators: list[str]
    allowed_methods: list[str]
    budget: dict[str, Any]
    generators: list[GeneratorView] = Field(
        default_factory=list,
        description="The allowed generator families with their knobs (what `data_generate` takes).",
    )


@tool("contract.show", roles=ALL, kind="monitoring", input=NoInput, result=ContractView)
def contract_show(ctx: ToolContext, caller: Caller, inp: NoInput) -> ContractView:
    """The task contract, without protected items."""
    c = ctx.contract
    return ContractView(
        task=c.task,
        capability=c.capability,
        base_model_digest=c.base_model_digest,
        evaluator_digest=c.evaluator.evaluator_digest,
        template_sha256=c.evaluator.template_sha256,
        decoding=c.evaluator.decoding,
        stop=c.evaluator.stop,
        split_sizes={k: len(v) for k, v in c.evaluator.sample_ids.items()},
        allowed_generators=c.allowed_generators,
        allowed_methods=c.allowed_methods,
        budget=c.budget.model_dump(),
        generators=generator_views(ctx),
    )


class Quota(BaseModel):
    experiments_used: int
    experiments_left: int
    max_train_steps: int
    max_rows: int


@tool("quota.show", roles=ALL, kind="monitoring", input=NoInput, result=Quota)
def quota_show(ctx: ToolContext, caller: Caller, inp: NoInput) -> Quota:
    """Budget used and left."""
    used = len(ctx.state().experiments)
    b = ctx.contract.budget
    return Quota(
        experiments_used=used,
        experiments_left=max(0, b.max_experiments - used),
        max_train_steps=b.max_train_steps,
        max_rows=b.max_rows,
    )


class TailInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    n: int = Field(default=20, ge=1, le=500, description="How many of the latest events.")


class TailEvent(BaseModel):
    seq: int
    kind: str
    actor: str
    ts: str


class Tail(BaseModel):
    events: list[TailEvent]


@tool("events.tail", roles=ALL, kind="monitoring", input=TailInput, result=Tail)
def events_tail(ctx: ToolContext, caller: Caller, inp: TailInput) -> Tail:
    """The latest events (kind and actor only: payloads can hold per-sample evidence)."""
    size = ctx.ledger.size()
    evs = ctx.ledger.events(since=max(0, size - inp.n))
    return Tail(events=[TailEvent(seq=e.seq, kind=e.kind, actor=f"{e.actor.role}:{e.actor.id}", ts=e.ts) for e in evs])
