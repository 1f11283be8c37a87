"""What the agent loop needs from a chat model: one turn of a tool-calling conversation.

Providers turn their own failures into `ProviderError`, marked retryable or not; the
loop owns retries and backoff, so that every failed attempt is recorded. `_providers`
picks the provider a configuration names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import RsiMasterError

__all__ = ["ChatModel", "Completion", "ProviderError", "ToolCall"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw, as the model sent it: it may not be JSON


@dataclass(frozen=True)
class Completion:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None


class ProviderError(RsiMasterError):
    """A request that did not produce a turn. `kind`: rate_limit, timeout, connection,
    server, auth, bad_request, malformed."""

    def __init__(self, message: str, *, kind: str, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.retry_after = retry_after


class ChatModel(Protocol):
    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, max_tokens: int, timeout: float, tag: str
    ) -> Completion:
        """One turn. `tag` names the episode (the fake model's scripts are keyed by it)."""

    def close(self) -> None: ...
