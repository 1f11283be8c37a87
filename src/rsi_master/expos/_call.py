"""The door's call path: one tool call for a caller, from the role check to the record.

Every refusal and every invalid call is recorded with the caller; nothing else writes tool and
guard records for agents' calls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ValidationError

from ..errors import RsiMasterError
from ..events import GuardBlocked
from ..events import ToolFailed as ToolFailedEvent
from ..events import ToolInvalid as ToolInvalidEvent
from ._capability import NODE_ID
from ._errors import ToolError, ToolFailed, ToolInvalid, ToolRefused
from ._guards import OVERRIDE_KEYS, GuardPolicy, ShortcutRun
from ._registry import TOOLS, Tool
from ._taxonomy import Subcategory

if TYPE_CHECKING:
    from ._caller import Caller
    from ._writes import WriteQuota

__all__ = ["UNAUTHENTICATED", "call_tool"]

UNAUTHENTICATED = {"role": "public", "id": "unauthenticated"}


class DoorSession(ShortcutRun, Protocol):
    """The run as the door's call path uses it (the session): whether the run has ended, the
    caller's write quota, the backend's clock, the guard policy and its questions, the recorder,
    and the tool context it builds for each call."""

    @property
    def guards(self) -> GuardPolicy: ...

    @property
    def quota(self) -> WriteQuota: ...

    def final_seq(self) -> int | None: ...

    def guard(self, reason: str, subcategory: Subcategory | None = None) -> None: ...


def call_tool(
    expos: DoorSession, caller: Caller, name: str, args: dict[str, Any] | BaseModel | None = None
) -> BaseModel:
    """Run one tool for a caller: role check, override check, validation, guards, action.

    Every refusal and every invalid call is recorded with the caller; a refused call
    never reaches the runtime. After the run's final record nothing is accepted or
    recorded: the run's result is fixed. Each guard asks the session's policy
    (`expos.guards`), which refuses (Strict) or waives the refusal and logs the call (Unguarded).
    """
    if not isinstance(caller.id, str) or not NODE_ID.fullmatch(caller.id):
        # Not recordable as an actor: refused before anything runs, and nothing is written.
        raise ToolInvalid(f"invalid caller id {str(caller.id)[:40]!r}: 1-128 letters, digits, '_', '.', '-'")
    final = expos.final_seq()
    if final is not None:
        raise ToolRefused(f"the run has ended (its final record is event {final}): no call is accepted")
    expos.quota.check(caller.cap)  # refused unrecorded: the door counts these per window
    expos.backend.before_call(str(name))
    if caller.role == "harness":
        # The harness writes its own records from its own code; no call through the door
        # may act as it (and no capability names it).
        expos.record(
            UNAUTHENTICATED,
            GuardBlocked(tool=str(name)[:100], subcategory=None, reason="no caller acts as the harness", args={}),
        )
        raise ToolRefused("no caller acts as the harness")
    tool = TOOLS.get(name) or next((t for t in TOOLS.values() if t.llm_name == name), None)
    raw = args.model_dump() if isinstance(args, BaseModel) else dict(args or {})
    if tool is None:
        expos.record(caller, ToolInvalidEvent(tool=name, reason="unknown tool"))
        raise ToolInvalid(f"unknown tool {name!r}; `expos tools` lists them")
    try:
        result = _run(expos, caller, tool, raw)
    except ToolRefused as exc:
        expos.guards.refused(expos.record, caller, tool.name, raw, exc)
    except ToolFailed as exc:  # it ran and failed (nothing to register): on the record like any call
        expos.record(caller, ToolFailedEvent(tool=tool.name, error=str(exc)[:300]))
        raise
    except ToolError:
        raise
    except RsiMasterError as exc:
        expos.record(caller, ToolFailedEvent(tool=tool.name, error=str(exc)))
        raise ToolFailed(f"{tool.name} failed: {exc}") from exc
    expos.record(caller, expos.guards.call_payload(tool, raw))
    return result


def _run(expos: DoorSession, caller: Caller, tool: Tool, raw: dict[str, Any]) -> BaseModel:
    if caller.role not in tool.roles or tool.name not in expos.contract.permitted_tools.get(caller.role, []):
        expos.guard(
            f"role {caller.role} may not call {tool.name}", Subcategory.TEST_SET_ACCESS if tool.protected else None
        )
    for key in raw:
        if key in OVERRIDE_KEYS:
            expos.guard(f"{tool.name} takes no {key!r}: the contract fixes it", OVERRIDE_KEYS[key])
    own = expos.guards.shortcut(tool.name)
    if own is not None:
        return own(expos, caller, raw)
    try:
        # An override that went through (a waived guard) is logged with the call; no tool takes one.
        inp = tool.input.model_validate({k: v for k, v in raw.items() if k not in OVERRIDE_KEYS})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "input"
        msg = f"invalid input for {tool.name}: {where}: {err['msg']}"
        expos.record(caller, ToolInvalidEvent(tool=tool.name, reason=msg))
        raise ToolInvalid(msg) from None
    try:
        return tool.impl(expos.tool_context(), caller, inp)
    except ToolInvalid as exc:  # valid by the schema, not by the run (a family the task lacks)
        expos.record(caller, ToolInvalidEvent(tool=tool.name, reason=str(exc)[:300]))
        raise
