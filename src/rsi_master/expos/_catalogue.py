"""Every registered tool: loads the tool modules (each registers its tools into `_registry`
when imported) and answers which tools a role is offered."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._registry import TOOLS, Tool

if TYPE_CHECKING:
    from ._contract import TaskContract

__all__ = ["llm_tool_schemas", "load", "tools_for"]


def load() -> None:
    """Register every tool. Deferred to first use: the tool modules pull in the run's state readers."""
    from . import (  # noqa: F401  (registration)
        _tools_main,
        _tools_public,
        _tools_reviewer,
        _tools_sample,
        _tools_worker,
        _tools_worker_results,
    )


def tools_for(role: str) -> list[Tool]:
    """The tools offered to a role (what it lists and is told about)."""
    load()
    return sorted((t for t in TOOLS.values() if role in t.roles and t.offered), key=lambda t: t.name)


def llm_tool_schemas(role: str, contract: TaskContract | None = None) -> list[dict[str, Any]]:
    """OpenAI-style function definitions for the tools a role may call (tailored to a
    run's contract when given)."""
    return [
        {
            "type": "function",
            "function": {"name": t.llm_name, "description": t.description, "parameters": t.input_schema(contract)},
        }
        for t in tools_for(role)
    ]
