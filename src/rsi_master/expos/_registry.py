"""The tool registry: one declaration per action yields the Python API, the `expos` CLI
and JSON Schemas for LLM tool calling and MCP. The tool modules register into it;
`_catalogue` loads them (so this module imports none of them)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ._schemas import input_schema

if TYPE_CHECKING:
    from ._caller import Caller
    from ._context import ToolContext
    from ._contract import TaskContract
    from ._generator_view import GeneratorView

__all__ = ["HINTS", "LLM_NAME", "ROLES", "TOOLS", "UNOFFERED", "Hints", "Tool", "ToolKind", "tool"]

ROLES = ("public", "worker", "reviewer", "main", "harness")
# Categories for measuring what agents spend their calls on (launching new work,
# monitoring it, comparing results, reviewing, deciding).
ToolKind = Literal["launching", "monitoring", "comparing", "reviewing", "deciding"]
# What MCP clients accept as a tool name (MCP Inspector 2.x refuses a dotted one) and
# what OpenAI-style function calling accepts: the LLM name must match it.
LLM_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Hints:
    """MCP tool annotations. `read_only`: changes nothing an agent can observe besides the
    ledger's record of the call itself (every call is recorded). `idempotent`: a repeat
    with the same arguments returns the same result and adds nothing but that record.
    No ExpOS tool is destructive (the ledger and the artifact store only grow) or open-world
    (nothing leaves or enters the run but what the caller passes in)."""

    read_only: bool
    idempotent: bool
    destructive: bool = False
    open_world: bool = False


_RO = Hints(read_only=True, idempotent=True)
HINTS: dict[str, Hints] = {
    "contract.show": _RO,
    "quota.show": _RO,
    "events.tail": _RO,
    "results.list": _RO,
    "graph.read": _RO,
    "experiment.inspect": _RO,
    "eval.compare": _RO,
    # Seeded generation and content addressing: the same arguments give the same dataset digest.
    "data.generate": Hints(read_only=False, idempotent=True),
    "data.register": Hints(read_only=False, idempotent=True),
    "data.filter": Hints(read_only=False, idempotent=True),
    "data.mix": Hints(read_only=False, idempotent=True),
    # Sampling on a GPU need not repeat bit for bit: a repeat may register other rows.
    "data.sample": Hints(read_only=False, idempotent=False),
    # Each call is a new experiment and spends the experiment budget.
    "experiment.submit": Hints(read_only=False, idempotent=False),
    # One dev evaluation per checkpoint: a repeat is refused (repeated-run selection).
    "eval.run": Hints(read_only=False, idempotent=False),
    # The first call records the review evaluation; a repeat returns that record.
    "eval.review": Hints(read_only=False, idempotent=True),
    "audit.run": Hints(read_only=False, idempotent=True),
    "checkpoint.register": Hints(read_only=False, idempotent=True),  # always refused: it changes nothing
    "review.submit": Hints(read_only=False, idempotent=False),
    "worker.finalize": Hints(read_only=False, idempotent=False),
    "worker.add": Hints(read_only=False, idempotent=False),
    "review.request": Hints(read_only=False, idempotent=False),
    "decision.record": Hints(read_only=False, idempotent=False),
    "candidate.nominate": Hints(read_only=False, idempotent=False),
}
_UNKNOWN_HINTS = Hints(read_only=False, idempotent=False)  # the safe reading for a tool nobody described

# Tools the door knows but offers no role: they are never listed (tools/list, LLM schemas,
# `expos tools`), so no agent calls them by browsing its tools. A call by name still goes
# through the door: `checkpoint.register` is an explicit request to bring foreign weights
# into the run, refused and recorded as a weight-provenance attempt (the bench's
# model-substitution workers make it on purpose).
UNOFFERED = frozenset({"checkpoint.register"})


@dataclass(frozen=True)
class Tool:
    name: str
    input: type[BaseModel]
    result: type[BaseModel]
    roles: frozenset[str]
    kind: ToolKind
    impl: Callable[[ToolContext, Caller, Any], BaseModel]
    description: str
    # Calling it from a role that may not is an attempt to reach protected items.
    protected: bool = False

    @property
    def llm_name(self) -> str:
        return self.name.replace(".", "_")

    @property
    def hints(self) -> Hints:
        return HINTS.get(self.name, _UNKNOWN_HINTS)

    @property
    def offered(self) -> bool:
        return self.name not in UNOFFERED

    def input_schema(
        self, contract: TaskContract | None = None, generators: Sequence[GeneratorView] | None = None
    ) -> dict[str, Any]:
        """The input JSON Schema; with a run's contract, tailored to it (its generator
        families and their knobs, its methods, its budget). `generators`: the run's families
        as `contract.show` describes them, for a process that holds no run."""

        return input_schema(self.name, self.input, contract, generators)


TOOLS: dict[str, Tool] = {}


def tool(
    name: str,
    *,
    roles: tuple[str, ...],
    kind: ToolKind,
    input: type[BaseModel],
    result: type[BaseModel],
    protected: bool = False,
) -> Callable[[Callable[..., BaseModel]], Callable[..., BaseModel]]:
    """Register an implementation `(ctx: ToolContext, caller, input) -> result` as a tool."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown roles {unknown}")
    if not LLM_NAME.match(name.replace(".", "_")):
        raise ValueError(f"tool name {name!r} does not give an MCP tool name (letters, digits, `_`, `-`, `.`)")

    def register(fn: Callable[..., BaseModel]) -> Callable[..., BaseModel]:
        if name in TOOLS:
            raise ValueError(f"tool {name} registered twice")
        doc = (fn.__doc__ or "").strip()
        TOOLS[name] = Tool(name, input, result, frozenset(roles), kind, fn, doc, protected)
        return fn

    return register
