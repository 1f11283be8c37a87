"""`run` and `resume`: create or reopen an orchestrated run, drive it, close it with the
harness's selection, its single `final` scoring and a JSON summary stored in the run."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import RsiMasterError
from ..events import OrchestraStart
from ..rundir import is_run_dir
from ._display import Display, PlainDisplay
from ._driver import drive
from ._executor import check_executor
from ._graph import ORCHESTRA, load_graph

if TYPE_CHECKING:
    from ..landscape import Landscape

__all__ = ["BACKENDS", "DEFAULTS", "default_budget", "parse_budget", "resume_run", "start_run"]

# Short experiments and a small evaluation set keep a default run of a few minutes
# useful on a laptop CPU: dev/review/final are scored on the first `eval_limit` items.
# `final` is scored by the harness only (the base and the selected checkpoint, once each):
# the whole split (final_limit 0), so that final_score has the resolution of the landscape's
# reference_score (200 items) instead of 2 points a sample.
# An experiment may take 3,000 steps: the Workers train at batch 2 (6,000 examples, about
# five minutes of one slot here), where 400 steps were 800 examples.
DEFAULTS: dict[str, Any] = {
    "budget_s": 300.0,
    "slots": 2,
    "seed": 0,
    "eval_limit": 50,
    "final_limit": 0,
    "max_train_steps": 3000,
}


def default_budget(task: str) -> float:
    """The wall-clock budget of a run that names none: five minutes (`DEFAULTS`) for every task,
    unless the task itself declares another (`TaskHints.budget_s`, a fact a task states about
    itself, like its splits; no table here is keyed by task)."""
    from ..tasks import UnknownTaskError, get_task, task_hints

    try:
        own = task_hints(get_task(task)).budget_s
    except UnknownTaskError:
        own = None  # start_run names the known tasks
    return float(DEFAULTS["budget_s"]) if own is None else float(own)


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


def _default_dir(task: str) -> Path:
    """`runs/<task>-<UTC time>` under the working directory (`runs/` is git-ignored)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    path, i = Path("runs") / f"{task}-{stamp}", 1
    while path.exists():
        path, i = Path("runs") / f"{task}-{stamp}-{i}", i + 1
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _check_new_dir(path: Path) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        if not is_run_dir(path):
            raise RsiMasterError(f"{path} already holds files; nothing was overwritten (choose another --dir)")
        raise RsiMasterError(
            f"{path} already holds a run; nothing was overwritten (resume it with "
            f"`rsi-master resume {path}` if it has not finished, or choose another --dir)"
        )


def start_run(task: Any, budget: str | float | None, *, durable: bool = True, **kwargs: Any) -> dict[str, Any]:
    """Create a run and drive it to its summary (the arguments: `_start_run`'s). `durable=False`
    skips fsync for the whole run (`_durable.not_durable`: a throw-away run in a temporary
    directory, as the simulated bench's campaigns are); what is written is the same."""
    import contextlib

    from .. import _durable

    with contextlib.nullcontext() if durable else _durable.not_durable():
        return _start_run(task, budget, **kwargs)


def _start_run(
    task: Any,
    budget: str | float | None,
    *,
    slots: int = 2,
    seed: int = 0,
    run_dir: str | Path | None = None,
    key_dir: str | None = None,
    eval_limit: int = DEFAULTS["eval_limit"],
    final_limit: int | None = None,
    display: Display | None = None,
    main: str = "policy",
    reviewer: str = "evidence",
    environment: str | None = None,
    max_train_steps: int = DEFAULTS["max_train_steps"],
    agent_settings: dict[str, Any] | None = None,
    timing_prior: dict[str, float] | None = None,
    worker: str = "tpe",
    setup: Callable[[Any], None] | None = None,
    gpus_per_slot: int = 0,
    eval_backend: str | None = None,
    keep: str = "all",
    model: str | Path | None = None,
    prior: str | Path | Landscape | None = None,
    backend: str = "real",
    landscape: Any = None,
    executor: str | None = None,
    ray_address: str | None = None,
) -> dict[str, Any]:
    """Create a run and drive it to its summary. `budget` None is the task's default
    (`default_budget`). `main` and `reviewer` name the agents (a
    registered name or `package.module:Class`); `environment` names an unguarded guard policy class
    (`package.module:Class`, the bench's workspace) for the bench's no-ExpOS ablation: the run's
    contract records it as unguarded and its settings name the class, so that its slot processes
    and a resume use it too. No CLI flag reaches it. `agent_settings`
    (JSON) is recorded there as well, for agents that read their configuration from the run;
    `timing_prior` ({step_s, overhead_s} measured on this machine) sizes trials until the run
    has measured its own.
    `final_limit` is the number of `final` items the harness scores (0: the whole split;
    None: `eval_limit`, as for the other splits).
    `worker` names the Worker agent the Main agent puts in the directions it adds; `setup`
    records more of the run's configuration (the agents layer's `agents.config`) before any
    agent acts. `model` is the base model (`--model`): a Hugging Face model directory or a
    repository id in the local Hugging Face cache; None is the shipped model.
    `gpus_per_slot` gives each slot process its own CUDA_VISIBLE_DEVICES (0: none
    assigned); `eval_backend` is the sealed evaluator's generation backend (`transformers`,
    `vllm`); `keep` is the checkpoint policy applied at the end (`all`, `referenced`). `prior`
    is the landscape the Main plans with (a file, `shipped` for the one shipped with the
    package, or a `Landscape`); None (the default) is no prior: the Main decides from the run's
    own evidence. It is checked before anything is written and stored in the run
    (`orchestra.start`'s `prior` names it). `executor` is where the nodes run (`process`,
    `inline`, `ray` at `ray_address`: docs/scale-out.md); None is the backend's own.

    `backend` is the experiment backend: `real` (TRL/PEFT and the sealed evaluator) or `sim`
    (training and evaluation drawn from `landscape`, a `sim.SimLandscape`, on a simulated clock
    with the nodes in this process; `task` is then the landscape's and may be None, a budget
    of None is the landscape's `budget_hours`, and `model`/`eval_backend` are refused). The
    bench's entry point for a simulated campaign: `start_run(None, "10h", backend="sim",
    landscape=land, slots=4, seed=s, run_dir=..., key_dir=..., durable=False)` (in a temporary
    directory)."""
    from ..expos import Budget, ExpOS
    from ..tasks import UnknownTaskError, list_tasks, resolve_task

    task, budget = _backend_inputs(backend, task, budget, landscape)
    given: Any = task
    if landscape is None:
        # A built-in task's name or a task directory's path (TaskInputError, one line, for a bad
        # one); a directory is read once here and the run is frozen from those bytes.
        try:
            given = resolve_task(task)
        except UnknownTaskError:
            raise RsiMasterError(
                f"unknown task {task!r}; known: {', '.join(list_tasks())}, or the path of a task directory"
            ) from None
        task = given.name
    elif model is not None or eval_backend is not None:
        raise RsiMasterError("a simulated run's model and evaluator are its landscape's: no --model or --eval-backend")
    budget_s = parse_budget(default_budget(task) if budget is None else budget)
    if not _task_of(given, landscape).generators():
        raise RsiMasterError(
            f"task {task!r} gives the Workers nothing to train on: it has no data generator and no "
            "[splits] train pool (docs/your-model.md)"
        )
    from ._main_budget import check_budget

    check_budget(budget_s, _task_of(given, landscape), timing_prior)  # too short: one line, nothing written
    if slots < 1:
        raise RsiMasterError(f"slots must be at least 1, got {slots}")
    from ..expos import KEEP_POLICIES
    from ..runtime import InvalidParameterError, check_backend, make_backend
    from ._gpus import assign_devices

    if keep not in KEEP_POLICIES:
        raise RsiMasterError(f"unknown --keep policy {keep!r}; known: {', '.join(KEEP_POLICIES)}")
    check_executor(executor, ray_address)
    if executor != "ray":  # Ray places GPUs on the cluster's machines, not on this one
        assign_devices(slots, gpus_per_slot)  # too few GPUs fails before anything is written
    try:
        eval_be = make_backend(eval_backend) if landscape is None else None
        if eval_be is not None:
            check_backend(eval_be)
    except InvalidParameterError as exc:
        raise RsiMasterError(str(exc)) from None
    source = None
    if model is not None:
        from ..runtime import resolve_model

        source = resolve_model(model)  # a bad model fails before anything is written
    from ._prior import check_prior, read_prior, store_prior

    prior_land = read_prior(prior) if prior is not None else None  # a bad file: one line, nothing written
    if prior_land is not None:
        check_prior(prior_land, _task_of(given, landscape))  # another task's landscape: one line too
    path = Path(run_dir) if run_dir else _default_dir(task)
    _check_new_dir(path)
    # Built beside its final place and renamed into it once the settings are recorded: a run
    # killed while being created leaves no directory that `resume` could not continue.
    building = path.with_name(f".{path.name}.creating-{os.getpid()}")
    from ._protocols import guard_policy

    guards = guard_policy(environment) if environment else None
    expos = ExpOS.create(
        building,
        given,
        budget=Budget(wall_seconds=budget_s, max_train_steps=max_train_steps, **BACKENDS[backend]["budget"]),
        eval_limit=eval_limit,
        final_limit=final_limit,
        key_dir=key_dir,
        guards=guards,
        eval_backend=eval_be,
        model=source,
        landscape=landscape,
    )
    # Absent rather than null when not given: the settings of runs without them stay as they were.
    optional: dict[str, Any] = {
        k: v
        for k, v in (
            ("environment", environment),
            ("agent_settings", agent_settings),
            ("timing_prior", timing_prior),
            ("gpus_per_slot", gpus_per_slot),
            ("keep", None if keep == "all" else keep),
        )
        if v
    }
    try:
        if prior_land is not None:
            optional["prior"] = store_prior(expos, prior_land)
        stored = (
            [{"digest": optional["prior"], "role": "input", "name": "prior_landscape"}] if "prior" in optional else []
        )
        expos.record(
            ORCHESTRA,
            OrchestraStart(
                version=1,
                task=task,
                budget_s=budget_s,
                slots=slots,
                seed=seed,
                main=main,
                reviewer=reviewer,
                worker=worker,
                eval_limit=eval_limit,
                final_limit=final_limit,
                pid=os.getpid(),
                **optional,
            ),
            stored,
        )
        if setup is not None:
            setup(expos)
    finally:
        expos.close()
    if path.exists():
        path.rmdir()  # empty (checked above)
    building.rename(path)
    from ..expos import lock_down
    from ..ledger import KeyDir
    from ._protocols import environment as _environment

    # As root the run and key directories are the harness's alone: agents joining through
    # `rsi-master agent` run as another user and reach the run only through the door.
    lock_down(path, KeyDir(key_dir).path)

    expos = ExpOS.open(path, key_dir=key_dir)
    try:
        return drive(
            _environment(expos),
            display or PlainDisplay(),
            key_dir,
            resume=False,
            executor=executor,
            ray_address=ray_address,
        )
    finally:
        expos.close()


def resume_run(
    run_dir: str | Path,
    *,
    key_dir: str | None = None,
    display: Display | None = None,
    executor: str | None = None,
    ray_address: str | None = None,
) -> dict[str, Any]:
    from ..expos import ExpOS

    check_executor(executor, ray_address)
    path = Path(run_dir)
    if not is_run_dir(path):
        raise RsiMasterError(f"{path} is not a run directory (no ledger.db or ledger.pg)")
    expos = ExpOS.open(path, key_dir=key_dir)
    try:
        try:
            graph = load_graph(expos)
        except ValidationError as exc:  # a record no Main writes now (a Worker given no time, say)
            err = exc.errors()[0]
            raise RsiMasterError(
                f"{path}: a recorded Worker's direction is invalid ({'.'.join(map(str, err['loc']))}: "
                f"{err['msg']}); nothing to resume. `rsi-master audit {path}` still reads it"
            ) from None
        if not graph.sessions:
            raise RsiMasterError(f"{path} is an ExpOS run that `rsi-master run` did not start: nothing to resume")
        if graph.finished is not None:
            raise RsiMasterError(
                f"{path} already finished (event {graph.finished.seq}); nothing to resume. "
                f"`rsi-master audit {path}` and `rsi-master verify {path}` read it"
            )
        from ._protocols import environment as _environment

        return drive(
            _environment(expos),
            display or PlainDisplay(),
            key_dir,
            resume=True,
            executor=executor,
            ray_address=ray_address,
        )
    finally:
        expos.close()


def _task_of(given: Any, landscape: Any) -> Any:
    """The `Task` a run will hold, before the run exists: the resolved task, or for a simulated
    run its landscape's (`tasks.SimTask`, as the backend builds it)."""
    from ..tasks import SimTask

    return given if landscape is None else SimTask(landscape)


def _backend_inputs(backend: str, task: Any, budget: Any, landscape: Any) -> tuple[Any, Any]:
    """(task, budget) for a run on `backend`: a simulated run's task and default budget are its
    landscape's."""
    if backend not in BACKENDS:
        raise RsiMasterError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    if BACKENDS[backend]["landscape"] != (landscape is not None):
        raise RsiMasterError(
            f"backend {backend} needs a landscape (--landscape FILE or --landscape-seed N)"
            if BACKENDS[backend]["landscape"]
            else f"a landscape is for the sim backend, not {backend}"
        )
    if landscape is None:
        if task is None:
            raise RsiMasterError("name a task")
        return task, budget
    if task is not None and task != landscape.task_name:
        raise RsiMasterError(f"a simulated run's task is its landscape's ({landscape.task_name}), not {task!r}")
    return landscape.task_name, budget if budget is not None else landscape.flags.budget_hours * 3600.0


# backend -> whether it simulates a landscape (`rsi-master run --backend`), and the contract
# budget fields it sets. A simulated campaign's clock bounds its experiments (ten simulated hours
# on four slots hold a few hundred): the real default of 64, sized for CPU runs of minutes, would
# leave most of its budget to Workers whose every experiment is refused.
BACKENDS: dict[str, dict[str, Any]] = {
    "real": {"landscape": False, "budget": {}},
    "sim": {"landscape": True, "budget": {"max_experiments": 2000}},
}
