"""Task registry: names to task instances.

Task instances cache their sealed evaluation sets, so the registry hands out one
instance per name and process.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from ._arithmetic import ArithmeticTask
from ._base import SuiteTask
from ._function_calling import FunctionCallingTask
from ._knowledge import KnowledgeTask
from ._program_synthesis import ProgramSynthesisTask

__all__ = ["UnknownTaskError", "get_task", "list_tasks"]

_TASKS: dict[str, Callable[[], SuiteTask]] = {
    ArithmeticTask.name: ArithmeticTask,
    FunctionCallingTask.name: FunctionCallingTask,
    KnowledgeTask.name: KnowledgeTask,
    ProgramSynthesisTask.name: ProgramSynthesisTask,
}


class UnknownTaskError(KeyError, ValueError):
    """No task by that name. Catchable as KeyError (a lookup) or ValueError (bad input)."""

    def __init__(self, name: object) -> None:
        self.name = name
        super().__init__(f"unknown task {name!r}; known tasks: {', '.join(list_tasks())}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


def list_tasks() -> list[str]:
    """Names of every task in the suite, sorted."""
    return sorted(_TASKS)


@cache
def _instance(name: str) -> SuiteTask:
    return _TASKS[name]()


def get_task(name: str) -> SuiteTask:
    """The task called `name` (one shared instance per process)."""
    if not isinstance(name, str) or name not in _TASKS:
        raise UnknownTaskError(name)
    return _instance(name)
