"""Errors of ExpOS tool calls. Exit codes of the `expos` CLI distinguish them."""

from __future__ import annotations

from ..errors import RsiMasterError
from ._taxonomy import Subcategory

__all__ = ["NothingSampled", "ToolError", "ToolFailed", "ToolInvalid", "ToolRefused"]


class ToolError(RsiMasterError):
    exit_code = 1


class ToolRefused(ToolError):
    """The call was not allowed: a role check, a guard or the budget. It never ran."""

    exit_code = 3

    def __init__(self, reason: str, subcategory: Subcategory | None = None) -> None:
        super().__init__(reason if subcategory is None else f"refused ({subcategory.value}): {reason}")
        self.reason = reason
        self.subcategory = subcategory


class ToolInvalid(ToolError):
    """The input did not validate against the tool's input model."""

    exit_code = 2


class ToolFailed(ToolError):
    """The call was allowed and ran, but the runtime failed (recorded, never hidden)."""

    exit_code = 4


class NothingSampled(ToolFailed):
    """`data.sample` ran and no completion passed the task's scorer: nothing to register. It
    carries the counts, so that a caller can tell a parent that never passes (stop sampling from
    it) from an unlucky draw without reading the message."""

    def __init__(self, message: str, *, parent: str, sampled: int, passing: int, prompts: int) -> None:
        super().__init__(message)
        self.parent = parent
        self.sampled = sampled
        self.passing = passing
        self.prompts = prompts
