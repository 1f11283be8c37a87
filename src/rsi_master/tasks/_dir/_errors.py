"""The one error a task directory gives for bad input."""

from __future__ import annotations

__all__ = ["TaskInputError"]

try:  # a user error the CLI prints as one line
    from rsi_master.errors import RsiMasterError

    _BASES: tuple[type[Exception], ...] = (RsiMasterError, ValueError)
except ImportError:  # the sealed evaluator's copy of the suite has no errors module
    _BASES = (ValueError,)


class TaskInputError(*_BASES):  # type: ignore[misc]
    """A task directory that cannot be used; the message is one line and names the file."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))
