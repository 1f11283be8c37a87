"""Resolving task and generator names with errors a user can act on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rsi_master import tasks as task_pkg
from rsi_master.runtime._errors import InvalidParameterError

if TYPE_CHECKING:
    from rsi_master.tasks import Task


def get_task(task: Task | str) -> Task:
    """A task object from a name (via `rsi_master.tasks.get_task`) or the object itself."""
    if not isinstance(task, str):
        return task

    getter = getattr(task_pkg, "get_task", None)
    if getter is None:
        raise InvalidParameterError("no task suite is installed (rsi_master.tasks.get_task is missing)")
    try:
        return getter(task)
    except (KeyError, ValueError, LookupError) as exc:
        names = ", ".join(task_names())
        raise InvalidParameterError(f"unknown task {task!r}; known tasks: {names}") from exc


def task_names() -> list[str]:

    for attr in ("task_names", "TASK_NAMES", "list_tasks"):
        value = getattr(task_pkg, attr, None)
        if value is not None:
            return sorted(value() if callable(value) else value)
    return []


def get_family(task: Task, family: str) -> Any:
    families = task.generators()
    if family not in families:
        raise InvalidParameterError(
            f"unknown generator family {family!r} for task {task.name!r}; known: {', '.join(sorted(families))}"
        )
    return families[family]


def check_params(family: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Validate generator knobs and fill defaults; unknown knobs and out-of-range values fail."""
    knobs = {k.name: k for k in family.knobs}
    unknown = sorted(set(params) - set(knobs))
    if unknown:
        raise InvalidParameterError(
            f"unknown parameter(s) {', '.join(unknown)} for generator {family.name!r}; known: {', '.join(sorted(knobs)) or 'none'}"
        )
    out: dict[str, Any] = {}
    for name, knob in knobs.items():
        value = params.get(name, knob.default)
        if knob.kind == "choice":
            if value not in knob.choices:
                raise InvalidParameterError(f"{family.name}.{name} must be one of {list(knob.choices)}, got {value!r}")
        else:
            caster = int if knob.kind == "int" else float
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise InvalidParameterError(f"{family.name}.{name} must be a number, got {value!r}")
            try:
                number = caster(value)
            except (TypeError, ValueError) as exc:
                raise InvalidParameterError(f"{family.name}.{name} must be {knob.kind}, got {value!r}") from exc
            if knob.kind == "int" and isinstance(value, float) and value != int(value):
                raise InvalidParameterError(f"{family.name}.{name} must be an integer, got {value!r}")
            if (knob.low is not None and number < knob.low) or (knob.high is not None and number > knob.high):
                raise InvalidParameterError(f"{family.name}.{name} must be in [{knob.low}, {knob.high}], got {value!r}")
            value = number
        out[name] = value
    return out
