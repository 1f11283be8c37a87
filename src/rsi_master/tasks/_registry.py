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
def _instance(name: str, seal_seed: int | None) -> SuiteTask:
    return _TASKS[name]() if seal_seed is None else _TASKS[name](seal_seed=seal_seed)


def get_task(name: str, *, seal_seed: int | None = None) -> SuiteTask:
    """The task called `name` (one shared instance per process and seal seed).

    `seal_seed` draws other evaluation items (a harness keeping its items private);
    the default is the public, reproducible suite.
    """
    if not isinstance(name, str) or name not in _TASKS:
        raise UnknownTaskError(name)
    if seal_seed is not None and (isinstance(seal_seed, bool) or not isinstance(seal_seed, int)):
        raise ValueError(f"seal_seed must be an int, got {type(seal_seed).__name__} {seal_seed!r}")
    return _instance(name, seal_seed)
