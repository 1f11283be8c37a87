"""Task registry: names to task instances.

Task instances cache their sealed evaluation sets, so the registry hands out one
instance per name and process.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

from ._arithmetic import ArithmeticTask
from ._base import SuiteTask
from ._dir import TaskInputError, load_task_dir
from ._function_calling import FunctionCallingTask
from ._knowledge import KnowledgeTask
from ._program_synthesis import ProgramSynthesisTask
from ._protocol import Task
from ._seal_key import PUBLIC_SEAL_KEY, SealKey

__all__ = ["UnknownTaskError", "get_task", "list_tasks", "resolve_task"]

_TASKS: dict[str, Callable[..., SuiteTask]] = {
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
def _instance(name: str, seal_key: SealKey) -> SuiteTask:
    return _TASKS[name](seal_key=seal_key)


def get_task(name: str, *, seal_seed: int | None = None, seal_key: SealKey | None = None) -> SuiteTask:
    """The built-in task called `name` (one shared instance per process and seal key).

    Without a key: the public splits, reproducible from the code. A run's harness passes
    the run's `seal_key` (its secret); `seal_seed` is shorthand for a public-seed key.
    The registry holds the built-in tasks only and never changes at run time: a run's task
    directory or simulated task is the run's own (`ExpOS.task`), never looked up by name.
    """
    if not isinstance(name, str) or name not in _TASKS:
        raise UnknownTaskError(name)
    if seal_seed is not None and seal_key is not None:
        raise ValueError("give a seal_seed or a seal_key, not both")
    if seal_key is None:
        seal_key = PUBLIC_SEAL_KEY if seal_seed is None else SealKey(seed=seal_seed)
    elif not isinstance(seal_key, SealKey):
        raise ValueError(f"seal_key must be a SealKey, got {type(seal_key).__name__}")
    return _instance(name, seal_key)


def _looks_like_path(spec: str) -> bool:
    return "/" in spec or spec.startswith((".", "~")) or Path(spec).is_dir()


def resolve_task(spec: str | Path | Task) -> Task:
    """A built-in task by name, or a task directory by path (loaded); a task object is returned
    as it is. UnknownTaskError or TaskInputError otherwise (one line)."""
    if not isinstance(spec, (str, Path)):
        return spec
    text = str(spec)
    if isinstance(spec, str) and text in _TASKS:
        return get_task(text)
    if isinstance(spec, Path) or _looks_like_path(text):
        task = load_task_dir(Path(text).expanduser())
        if task.name in _TASKS:
            raise TaskInputError(f"{task.root}: task name {task.name!r} is a built-in task's; choose another name")
        return task
    raise UnknownTaskError(text)
