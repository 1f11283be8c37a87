"""Agent memory: a list of typed step records that render themselves into chat messages
(smolagents' `ActionStep`). The same records, less the long texts, go to the ledger as
`agent.step` events."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_OBSERVATION_CHARS",
    "ActionStep",
    "Memory",
    "NoteStep",
    "TaskStep",
    "ToolCallRecord",
    "clip",
]

# A model that floods its output, or a tool whose result is long (per-sample diagnostics),
# would otherwise grow every later prompt: both are clipped where they enter memory.
MAX_CONTENT_CHARS = 8_000
MAX_OBSERVATION_CHARS = 12_000
# What of them the ledger keeps (the tool events hold the full facts).
LEDGER_CHARS = 2_000

Status = Literal["ok", "malformed", "unknown", "invalid", "refused", "failed", "skipped"]


def clip(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"... [clipped: {len(text) - limit} more characters]"


class TaskStep(BaseModel):
    """The brief the episode starts from."""

    kind: Literal["task"] = "task"
    text: str

    def to_messages(self) -> list[dict[str, Any]]:
        return [{"role": "user", "content": self.text}]


class NoteStep(BaseModel):
    """A harness note to the model (no tool was called; a limit is near)."""

    kind: Literal["note"] = "note"
    text: str

    def to_messages(self) -> list[dict[str, Any]]:
        return [{"role": "user", "content": self.text}]


class ToolCallRecord(BaseModel):
    id: str = Field(description="The model's id for the call (answers are matched to it).")
    name: str = Field(description="Tool name as the model sent it.")
    arguments: str = Field(description="Arguments as the model sent them (may not be JSON).")
    status: Status = Field(description="ok, or why the call did not run or failed.")
    observation: str = Field(description="What the model is told: the result as JSON, or the error.")


class ActionStep(BaseModel):
    """One model turn: its text, its tool calls and what each returned, its cost."""

    kind: Literal["action"] = "action"
    version: int = 1
    index: int = Field(description="Turn number within the episode, from 0.")
    content: str | None = Field(default=None, description="The model's text (clipped).")
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = Field(default=0.0, description="Wall time of the request, retries included.")
    finish_reason: str | None = None

    def to_messages(self) -> list[dict[str, Any]]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            # Arguments that were not a JSON object are replayed as {}: some servers reject a
            # history they cannot parse, and the observation already quotes what was sent.
            msg["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name or "?", "arguments": c.arguments if c.status != "malformed" else "{}"},
                }
                for c in self.tool_calls
            ]
        return [msg] + [{"role": "tool", "tool_call_id": c.id, "content": c.observation} for c in self.tool_calls]

    def ledger_payload(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "index": self.index,
            "content": clip(self.content, LEDGER_CHARS),
            "tool_calls": [
                {
                    "name": c.name,
                    "arguments": clip(c.arguments, LEDGER_CHARS),
                    "status": c.status,
                    **({"error": clip(c.observation, LEDGER_CHARS)} if c.status != "ok" else {}),
                }
                for c in self.tool_calls
            ],
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "seconds": round(self.seconds, 3),
            "finish_reason": self.finish_reason,
        }


class Memory(BaseModel):
    system: str
    steps: list[TaskStep | NoteStep | ActionStep] = Field(default_factory=list)

    def messages(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "system", "content": self.system}]
        for s in self.steps:
            out += s.to_messages()
        return out

    @property
    def actions(self) -> list[ActionStep]:
        return [s for s in self.steps if isinstance(s, ActionStep)]


def brief_block(data: Any) -> str:
    """A JSON block the model (and the fake model's `${brief...}` references) can read."""
    return "```json\n" + json.dumps(data, indent=1, sort_keys=True, default=str) + "\n```"
