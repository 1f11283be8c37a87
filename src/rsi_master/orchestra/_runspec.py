"""`RunSpec`: one typed description of a run as it is asked for (the CLI's `run`, the bench's
campaigns and Python callers build it), and `resolve_spec`, the one place that turns it into a
`ResolvedRun` and refuses bad input, one line per rule, before anything is written.

`--task` is a reference here (a built-in name, a task directory's path, or a `Task`) and a `Task`
from `resolve_spec` on; `--budget` is text or seconds here and `ResolvedRun.budget_s` from then on.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import RsiMasterError
from ..expos import KEEP_POLICIES, check_run_inputs
from ..rundir import is_run_dir
from ..tasks import SimTask, UnknownTaskError, list_tasks, resolve_task, task_hints
from ._executor import check_executor
from ._gpus import assign_devices
from ._main_budget import check_budget
from ._prior import check_prior, read_prior
from ._protocols import guard_policy

if TYPE_CHECKING:
    from ..expos import ExpOS, GuardPolicy
    from ..landscape import Landscape
    from ..runtime import EvalBackend, ModelSource
    from ..sim import SimWorld
    from ..tasks import Task

__all__ = [
    "BACKENDS",
    "DEFAULTS",
    "ResolvedRun",
    "RunSpec",
    "check_new_dir",
    "default_budget",
    "parse_budget",
    "resolve_spec",
    "resolve_task_ref",
]

# Short experiments and a small evaluation set keep a default run of a few minutes
# useful on a laptop CPU: dev/review/final are scored on the first `eval_limit` items.
# `final` is scored by the harness only (the base and the selected checkpoint, once each):
# the whole split (final_limit 0), so that final_score has the resolution of the landscape's
# reference_score (200 items) instead of 2 points a sample.
# An experiment may take 3,000 steps, because the Workers train at batch 2 (6,000 examples,
# about five minutes of one slot here) and the curves turn only after thousands of examples.
DEFAULTS: dict[str, Any] = {
    "budget_s": 300.0,
    "slots": 2,
    "seed": 0,
    "eval_limit": 50,
    "final_limit": 0,
    "max_train_steps": 3000,
}

# backend -> whether it simulates a world (`rsi-master run --backend`), and the contract
# budget fields it sets. A simulated campaign's clock bounds its experiments (ten simulated hours
# on four slots hold a few hundred): the real default of 64, sized for CPU runs of minutes, would
# leave most of its budget to Workers whose every experiment is refused.
BACKENDS: dict[str, dict[str, Any]] = {
    "real": {"world": False, "budget": {}},
    "sim": {"world": True, "budget": {"max_experiments": 2000}},
}

KEEP_CHOICES = ("all", "referenced")


@dataclass(frozen=True)
class RunSpec:
    """A run as it is asked for, before anything is checked.

    `task`: a built-in task's name, a task directory's path or a `Task` (None for a simulated run:
    its world's). `budget`: seconds or a duration (`90s`, `5m`, `1h30m`); None is the task's
    default (`default_budget`; a simulated run's is its world's `budget_hours`). `backend`:
    `real` (TRL/PEFT and the sealed evaluator) or `sim` (training and evaluation drawn from
    `world` on a simulated clock). `model`: a Hugging Face model directory or cached repository
    id (None: the shipped model). `eval_backend`: `transformers` or `vllm` (None: the default).
    `main`, `reviewer`, `worker`: the agents (a registered name or `package.module:Class`).
    `environment`: an unguarded guard policy class for the bench's no-ExpOS ablation (no CLI flag
    reaches it). `agent_settings` (JSON) and `timing_prior` ({step_s, example_s, overhead_s}) are recorded in
    the run's settings; `setup` records more of the run's configuration before any agent acts.
    `final_limit`: `final` items the harness scores (0: the whole split; None: `eval_limit`).
    `gpus_per_slot`: CUDA devices per slot process. `keep`: the checkpoint policy at the end.
    `prior`: the landscape the Main plans with (a file, `shipped`, or a `Landscape`; None: none).
    `executor`: where the nodes run (`process`, `inline`, `ray` at `ray_address`; None: the
    backend's own)."""

    task: str | Path | Task | None = None
    budget: str | float | None = None
    backend: str = "real"
    world: SimWorld | None = None
    model: str | Path | None = None
    eval_backend: str | None = None
    slots: int = 2
    seed: int = 0
    run_dir: str | Path | None = None
    key_dir: str | None = None
    eval_limit: int = DEFAULTS["eval_limit"]
    final_limit: int | None = None
    max_train_steps: int = DEFAULTS["max_train_steps"]
    main: str = "policy"
    reviewer: str = "evidence"
    worker: str = "tpe"
    environment: str | None = None
    agent_settings: Mapping[str, Any] | None = None
    timing_prior: Mapping[str, float] | None = None
    setup: Callable[[ExpOS], None] | None = None
    gpus_per_slot: int = 0
    keep: str = "all"
    prior: str | Path | Landscape | None = None
    executor: str | None = None
    ray_address: str | None = None
    sim_speed: float | None = None  # a simulated run on Ray: simulated seconds per real second


@dataclass(frozen=True)
class ResolvedRun:
    """A `RunSpec` checked and resolved: everything `start_run` needs, nothing left to look up."""

    spec: RunSpec
    task: Task  # the run's task (a simulated run's: its world's `SimTask`)
    budget_s: float  # the wall-clock budget, recorded once (`orchestra.start`'s `budget_s`)
    path: Path  # the new run directory (not yet created)
    model: ModelSource | None  # the base model (None: the shipped one)
    eval_backend: EvalBackend | None  # the sealed evaluator's backend (None for a simulated run)
    prior: Landscape | None  # the Main's prior (None: none)
    guards: GuardPolicy | None  # the bench's unguarded policy (None: Strict)


def parse_budget(text: str | float | int) -> float:
    """Seconds, or a duration such as `90s`, `5m`, `1h30m`."""
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        s = str(text).strip().lower()
        if re.fullmatch(r"-?\d+(\.\d+)?", s):
            seconds = float(s)
        else:
            parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", s)
            if not parts or "".join(a + b for a, b in parts) != s.replace(" ", ""):
                raise RsiMasterError(f"budget {text!r}: give seconds or a duration such as 90s, 5m, 1h30m")
            seconds = sum(float(a) * {"h": 3600, "m": 60, "s": 1}[b] for a, b in parts)
    if not seconds > 0:
        raise RsiMasterError(f"budget must be positive, got {text!r}")
    return seconds


def default_budget(task: Task) -> float:
    """The wall-clock budget of a run that names none: five minutes (`DEFAULTS`) for every task,
    unless the task itself declares another (`TaskHints.budget_s`, a fact a task states about
    itself, like its splits; no table here is keyed by task)."""

    own = task_hints(task).budget_s
    return float(DEFAULTS["budget_s"]) if own is None else float(own)


def resolve_task_ref(ref: str | Path | Task) -> Task:
    """The `Task` a reference names: a built-in task's name, a task directory's path (read once;
    a run is frozen from those bytes), or a `Task` as it is. One line for a bad one."""

    try:
        task: Task = resolve_task(ref)
    except UnknownTaskError:
        raise RsiMasterError(
            f"unknown task {ref!r}; known: {', '.join(list_tasks())}, or the path of a task directory"
        ) from None
    return task


def check_new_dir(path: Path) -> None:
    """Refuse a run directory that holds anything: nothing is ever overwritten."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        if not is_run_dir(path):
            raise RsiMasterError(f"{path} already holds files; nothing was overwritten (choose another --dir)")
        raise RsiMasterError(
            f"{path} already holds a run; nothing was overwritten (resume it with "
            f"`rsi-master resume {path}` if it has not finished, or choose another --dir)"
        )


def _default_dir(task: str) -> Path:
    """`runs/<task>-<UTC time>` under the working directory (`runs/` is git-ignored)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    path, i = Path("runs") / f"{task}-{stamp}", 1
    while path.exists():
        path, i = Path("runs") / f"{task}-{stamp}-{i}", i + 1
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _resolve_backend_task(spec: RunSpec) -> tuple[Task, float]:
    """(task, budget in seconds) for the spec's backend: a simulated run's task and default budget
    are its world's."""

    if spec.backend not in BACKENDS:
        raise RsiMasterError(f"unknown backend {spec.backend!r}; known: {', '.join(BACKENDS)}")
    land = spec.world
    if BACKENDS[spec.backend]["world"] != (land is not None):
        raise RsiMasterError(
            f"backend {spec.backend} needs a simulated world (--world FILE or --world-seed N)"
            if BACKENDS[spec.backend]["world"]
            else f"a simulated world is for the sim backend, not {spec.backend}"
        )
    if land is None:
        if spec.task is None:
            raise RsiMasterError("name a task")
        task = resolve_task_ref(spec.task)
        return task, parse_budget(default_budget(task) if spec.budget is None else spec.budget)
    if spec.task is not None and spec.task != land.task_name:
        raise RsiMasterError(f"a simulated run's task is its world's ({land.task_name}), not {spec.task!r}")
    check_run_inputs(simulated=True, model=spec.model, eval_backend=spec.eval_backend)
    sim_task: Task = SimTask(land)
    return sim_task, parse_budget(land.flags.budget_hours * 3600.0 if spec.budget is None else spec.budget)


def resolve_spec(spec: RunSpec) -> ResolvedRun:
    """Check every input of a run and resolve it, each rule refused in one line (`RsiMasterError`)
    before anything is written: the backend and its task, the budget, the slots and limits, the
    checkpoint policy, the executor and GPUs, the evaluator's backend, the model, the prior and the
    run directory."""
    from ..runtime import InvalidParameterError, check_backend, make_backend

    task, budget_s = _resolve_backend_task(spec)
    if not task.generators():
        raise RsiMasterError(
            f"task {task.name!r} gives the Workers nothing to train on: it has no data generator and no "
            "[splits] train pool (docs/your-model.md)"
        )
    timing = dict(spec.timing_prior) if spec.timing_prior is not None else None
    check_budget(budget_s, task, timing)
    if spec.slots < 1:
        raise RsiMasterError(f"slots must be at least 1, got {spec.slots}")
    check_run_inputs(eval_limit=spec.eval_limit, final_limit=spec.final_limit)
    if spec.keep not in KEEP_POLICIES:
        raise RsiMasterError(f"unknown --keep policy {spec.keep!r}; known: {', '.join(KEEP_POLICIES)}")
    check_executor(spec.executor, spec.ray_address, spec.sim_speed)
    if spec.sim_speed is not None and spec.world is None:
        raise RsiMasterError("--sim-speed is for a simulated run (--backend sim) on --executor ray")
    if spec.executor != "ray":  # Ray places GPUs on the cluster's machines, not on this one
        assign_devices(spec.slots, spec.gpus_per_slot)  # too few GPUs fails before anything is written
    eval_be = None
    try:
        if spec.world is None:
            eval_be = make_backend(spec.eval_backend)
            check_backend(eval_be)
    except InvalidParameterError as exc:
        raise RsiMasterError(str(exc)) from None
    source = None
    if spec.model is not None:
        from ..runtime import resolve_model

        source = resolve_model(spec.model)
    prior = read_prior(spec.prior) if spec.prior is not None else None
    if prior is not None:
        check_prior(prior, task)  # another task's landscape: one line
    path = Path(spec.run_dir) if spec.run_dir else _default_dir(task.name)
    check_new_dir(path)
    guards = guard_policy(spec.environment) if spec.environment else None
    return ResolvedRun(spec, task, budget_s, path, source, eval_be, prior, guards)
