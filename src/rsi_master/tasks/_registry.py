"""Task registry: names to task instances.

Task instances cache their sealed evaluation sets, so the registry hands out one
instance per name and process.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from ._arithmetic import ArithmeticTask
from ._base import SuiteTask
from ._function_calling import FunctionCallingTask
from ._knowledge import KnowledgeTask
from ._program_synthesis import ProgramSynthesisTask
from ._seal_key import PUBLIC_SEAL_KEY, SealKey

__all__ = ["UnknownTaskError", "get_task", "list_tasks", "register_task"]

_TASKS: dict[str, Callable[..., SuiteTask]] = {
    ArithmeticTask.name: ArithmeticTask,
    FunctionCallingTask.name: FunctionCallingTask,
    KnowledgeTask.name: KnowledgeTask,
    ProgramSynthesisTask.name: ProgramSynthesisTask,
}

# Tasks a run brings with it (a simulated landscape's task), registered by the session that
# opens the run: name -> factory(seal_key). Not built-ins, so `list_tasks` does not show them.
_RUN_TASKS: dict[str, Callable[[SealKey], Any]] = {}


def register_task(name: str, factory: Callable[[SealKey], Any]) -> None:
    """Make `get_task(name)` build this process's task called `name` with `factory(seal_key)`
    (the session of a run whose contract carries its own task). A built-in name is refused;
    registering a name again replaces it (the next run opened in this process)."""
    if name in _TASKS:
        raise ValueError(f"{name!r} is a built-in task")
    _RUN_TASKS[name] = factory


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
def _instance(name: str, seal_key: SealKey) -> SuiteTask:
    return _TASKS[name](seal_key=seal_key)


def get_task(name: str, *, seal_seed: int | None = None, seal_key: SealKey | None = None) -> SuiteTask:
    """The task called `name` (one shared instance per process and seal key).

    Without a key: the public splits, reproducible from the code. A run's harness passes
    the run's `seal_key` (its secret); `seal_seed` is shorthand for a public-seed key.
    """
    if not isinstance(name, str) or (name not in _TASKS and name not in _RUN_TASKS):
        raise UnknownTaskError(name)
    if seal_seed is not None and seal_key is not None:
        raise ValueError("give a seal_seed or a seal_key, not both")
    if seal_key is None:
        seal_key = PUBLIC_SEAL_KEY if seal_seed is None else SealKey(seed=seal_seed)
    elif not isinstance(seal_key, SealKey):
        raise ValueError(f"seal_key must be a SealKey, got {type(seal_key).__name__}")
    if name in _RUN_TASKS:
        return _run_instance(name, _RUN_TASKS[name], seal_key)  # type: ignore[no-any-return]
    return _instance(name, seal_key)


@cache
def _run_instance(name: str, factory: Callable[[SealKey], Any], seal_key: SealKey) -> Any:
    # Keyed by the factory too: a name registered again (another run) gets its own instances.
    return factory(seal_key)
