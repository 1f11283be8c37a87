"""The one error a task directory gives for bad input."""

from __future__ import annotations

try:  # a user error the CLI prints as one line
    from rsi_master.errors import RsiMasterError as _Base
except ImportError:  # the sealed evaluator's copy of the suite has no errors module
    _Base = ValueError  # type: ignore[misc,assignment]

__all__ = ["TaskInputError"]


class TaskInputError(_Base, ValueError):
    """A task directory that cannot be used; the message is one line and names the file."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))
