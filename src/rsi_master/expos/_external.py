"""What callers from outside the run's own processes (the `expos` CLI, the MCP server)
may not do that the run's own agents may.

A Worker node's direction names the agent code its slot process imports and runs
(`direction.agent`). The run's own Main agents set it to the run's Worker agent; a Main
acting from outside could otherwise make the scheduler run any importable code. Its
`worker.add` may therefore name only the run's recorded Worker agent (or none).
"""

from __future__ import annotations

from typing import Any

from ..events import GuardBlocked, OrchestraStart, typed
from ._caller import Caller
from ._catalogue import load as _load
from ._errors import ToolRefused
from ._registry import TOOLS
from ._session import ExpOS

__all__ = ["external_call"]


def external_call(expos: ExpOS, caller: Caller, name: str, args: dict[str, Any]) -> Any:
    """`expos.call` for an external caller, with the check above (refusals recorded)."""
    _load()
    tool = TOOLS.get(name) or next((t for t in TOOLS.values() if t.llm_name == name), None)
    direction = args.get("direction")
    if tool is not None and tool.name == "worker.add" and isinstance(direction, dict) and "agent" in direction:
        starts = expos.own_events("orchestra.start")
        allowed = typed(starts[0], OrchestraStart).payload.worker if starts else "tpe"
        if direction["agent"] != allowed:
            reason = f"direction.agent is the run's Worker agent ({allowed!r}), not the caller's choice"
            expos.record(
                caller,
                GuardBlocked(
                    tool=tool.name,
                    subcategory=None,
                    reason=reason,
                    args={"direction": {"agent": str(direction["agent"])[:200]}},
                ),
            )
            raise ToolRefused(reason)
    return expos.call(caller, name, args)
