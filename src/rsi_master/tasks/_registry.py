"""Task registry: names to task instances.

Task instances cache their sealed evaluation sets, so the registry hands out one
instance per name and process.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from ._arithmetic import ArithmeticTask
from ._base import SuiteTask
from ._dir import FileTask, TaskInputError, load_task_dir
from ._function_calling import FunctionCallingTask
from ._knowledge import KnowledgeTask
from ._program_synthesis import ProgramSynthesisTask
from ._seal_key import PUBLIC_SEAL_KEY, SealKey

__all__ = ["UnknownTaskError", "get_task", "list_tasks", "register_task", "resolve_task"]

_TASKS: dict[str, Callable[..., SuiteTask]] = {
    ArithmeticTask.name: ArithmeticTask,
    FunctionCallingTask.name: FunctionCallingTask,
    KnowledgeTask.name: KnowledgeTask,
    ProgramSynthesisTask.name: ProgramSynthesisTask,
}

# Task directories known to this process by name: the run's own copy, registered when a run is
# frozen or opened (`register_task`), so that code holding only the contract's task name finds it.
_FILE_TASKS: dict[str, FileTask] = {}
# Tasks a run brings with it (a simulated landscape's task), registered by the session that
# opens the run: name -> factory(seal_key). Not built-ins, so `list_tasks` does not show them.
_RUN_TASKS: dict[str, Callable[[SealKey], Any]] = {}


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
    if isinstance(name, str) and name not in _TASKS and name in _FILE_TASKS:
        return _FILE_TASKS[name]  # type: ignore[return-value]  # its own items: no seal key draws them
    if not isinstance(name, str) or (name not in _TASKS and name not in _RUN_TASKS):
        raise UnknownTaskError(name)
    if seal_seed is not None and seal_key is not None:
        raise ValueError("give a seal_seed or a seal_key, not both")
    if seal_key is None:
        seal_key = PUBLIC_SEAL_KEY if seal_seed is None else SealKey(seed=seal_seed)
    elif not isinstance(seal_key, SealKey):
        raise ValueError(f"seal_key must be a SealKey, got {type(seal_key).__name__}")
    if name in _RUN_TASKS:
        return _run_instance(name, _RUN_TASKS[name], seal_key)
    return _instance(name, seal_key)


@cache
def _run_instance(name: str, factory: Callable[[SealKey], Any], seal_key: SealKey) -> Any:
    # Keyed by the factory too: a name registered again (another run) gets its own instances.
    return factory(seal_key)


def register_task(task: FileTask | str, factory: Callable[[SealKey], Any] | None = None) -> Any:
    """Make a task known by its name in this process (the latest registration of a name wins).

    `register_task(file_task)`: a task directory's task (returned). `register_task(name, factory)`:
    a task a run brings with it (a simulated landscape's), built per seal key by `factory(seal_key)`.
    A built-in name is refused either way."""
    if isinstance(task, str):
        if factory is None:
            raise TypeError("register_task(name, factory): a factory is needed with a name")
        if task in _TASKS:
            raise ValueError(f"{task!r} is a built-in task")
        _FILE_TASKS.pop(task, None)
        _RUN_TASKS[task] = factory
        return None
    if not isinstance(task, FileTask):
        raise TypeError(f"only a FileTask can be registered, not {type(task).__name__}")
    if task.name in _TASKS:
        raise TaskInputError(f"{task.root}: task name {task.name!r} is a built-in task's; choose another name")
    _RUN_TASKS.pop(task.name, None)
    _FILE_TASKS[task.name] = task
    return task


def _looks_like_path(spec: str) -> bool:
    return "/" in spec or spec.startswith((".", "~")) or Path(spec).is_dir()


def resolve_task(spec: Any) -> Any:
    """A built-in task by name, or a task directory by path (loaded and registered); a task
    object is returned as it is. UnknownTaskError or TaskInputError otherwise (one line)."""
    if not isinstance(spec, (str, Path)):
        return spec
    text = str(spec)
    if isinstance(spec, str) and (text in _TASKS or text in _RUN_TASKS):
        return get_task(text)
    if isinstance(spec, Path) or _looks_like_path(text):
        return register_task(load_task_dir(Path(text).expanduser()))
    if text in _FILE_TASKS:
        return _FILE_TASKS[text]
    raise UnknownTaskError(text)
