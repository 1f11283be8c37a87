"""The tool registry: one declaration per action yields the Python API, the `expos` CLI
and JSON Schemas for LLM tool calling."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

if TYPE_CHECKING:
    from ._session import Caller, ExpOS

__all__ = ["ROLES", "TOOLS", "Tool", "ToolKind", "llm_tool_schemas", "tool", "tools_for"]

ROLES = ("public", "worker", "reviewer", "main", "harness")
# Categories for measuring what agents spend their calls on (launching new work,
# monitoring it, comparing results, reviewing, deciding).
ToolKind = Literal["launching", "monitoring", "comparing", "reviewing", "deciding"]


@dataclass(frozen=True)
class Tool:
    name: str
    input: type[BaseModel]
    result: type[BaseModel]
    roles: frozenset[str]
    kind: ToolKind
    impl: Callable[["ExpOS", "Caller", Any], BaseModel]
    description: str
    # Calling it from a role that may not is an attempt to reach protected items.
    protected: bool = False

    @property
    def llm_name(self) -> str:
        return self.name.replace(".", "_")


TOOLS: dict[str, Tool] = {}


def tool(name: str, *, roles: tuple[str, ...], kind: ToolKind, input: type[BaseModel], result: type[BaseModel],
         protected: bool = False) -> Callable[[Callable[..., BaseModel]], Callable[..., BaseModel]]:
    """Register an implementation `(expos, caller, input) -> result` as a tool."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown roles {unknown}")

    def register(fn: Callable[..., BaseModel]) -> Callable[..., BaseModel]:
        if name in TOOLS:
            raise ValueError(f"tool {name} registered twice")
        doc = (fn.__doc__ or "").strip()
        TOOLS[name] = Tool(name, input, result, frozenset(roles), kind, fn, doc, protected)
        return fn

    return register


def tools_for(role: str) -> list[Tool]:
    _load()
    return sorted((t for t in TOOLS.values() if role in t.roles), key=lambda t: t.name)


def llm_tool_schemas(role: str) -> list[dict[str, Any]]:
    """OpenAI-style function definitions for the tools a role may call."""
    return [
        {"type": "function",
         "function": {"name": t.llm_name, "description": t.description, "parameters": t.input.model_json_schema()}}
        for t in tools_for(role)
    ]


def _load() -> None:
    from . import _tools_main, _tools_public, _tools_reviewer, _tools_worker  # noqa: F401  (registration)
