"""`run` and `resume`: create or reopen an orchestrated run, drive it, close it with the
harness's selection, its single `final` scoring and a JSON summary stored in the run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import _clock, _durable
from ..errors import RsiMasterError
from ..events import OrchestraStart
from ..expos import Budget, ExpOS, lock_down
from ..ledger import KeyDir
from ..rundir import is_run_dir
from ._display import Display, PlainDisplay
from ._driver import drive
from ._executor import check_executor
from ._graph import ORCHESTRA, load_graph
from ._prior import store_prior
from ._protocols import environment as _environment
from ._runspec import BACKENDS, ResolvedRun, RunSpec, resolve_spec

__all__ = ["resume_run", "start_run"]


def start_run(spec: RunSpec, *, display: Display | None = None, durable: bool = True) -> dict[str, Any]:
    """Create the run `spec` describes and drive it to its summary. Every input is checked first
    (`resolve_spec`: one line each, nothing written). `durable=False` skips fsync for the whole run
    (`_durable.not_durable`: a throw-away run in a temporary directory, as the simulated bench's
    campaigns are); what is written is the same.

    The bench's entry point for a simulated campaign: `start_run(RunSpec(budget="10h",
    backend="sim", world=land, slots=4, seed=s, run_dir=..., key_dir=...), durable=False)`."""
    import contextlib

    resolved = resolve_spec(spec)
    with contextlib.nullcontext() if durable else _durable.not_durable():
        # A run on a simulated clock (the inline executor's, or Ray's scaled one) is created on it,
        # from `SIM_EPOCH`: its contract and `orchestra.start` (whose time starts its budget) are
        # not dated by the real clock, and its executor's clock continues from there. A simulated
        # run on the real clock (Ray without --sim-speed) is created on the real clock.
        spec_ = resolved.spec
        simulated = spec_.backend == "sim" and (spec_.executor in (None, "inline") or spec_.sim_speed is not None)
        with _clock.use_clock(_clock.StillClock(_clock.SIM_EPOCH)) if simulated else contextlib.nullcontext():
            _create(resolved)
        return _drive_new(resolved, display or PlainDisplay())


def _create(run: ResolvedRun) -> None:
    """Freeze the run's contract and record its settings (`orchestra.start`) in a directory built
    beside its final place and renamed into it once complete: a run killed while being created
    leaves no directory that `resume` could not continue."""

    spec, path = run.spec, run.path
    building = path.with_name(f".{path.name}.creating-{os.getpid()}")
    expos = ExpOS.create(
        building,
        run.task,
        budget=Budget(max_train_steps=spec.max_train_steps, **BACKENDS[spec.backend]["budget"]),
        eval_limit=spec.eval_limit,
        final_limit=spec.final_limit,
        key_dir=spec.key_dir,
        guards=run.guards,
        eval_backend=run.eval_backend,
        model=run.model,
        world=spec.world,
    )
    # Absent rather than null when not given: the settings of runs without them stay as they were.
    optional: dict[str, Any] = {
        k: v
        for k, v in (
            ("environment", spec.environment),
            ("agent_settings", dict(spec.agent_settings) if spec.agent_settings else None),
            ("timing_prior", dict(spec.timing_prior) if spec.timing_prior else None),
            ("gpus_per_slot", spec.gpus_per_slot),
            ("keep", None if spec.keep == "all" else spec.keep),
        )
        if v
    }
    try:
        if run.prior is not None:
            optional["prior"] = store_prior(expos.reader, run.prior)
        stored = (
            [{"digest": optional["prior"], "role": "input", "name": "prior_landscape"}] if "prior" in optional else []
        )
        expos.record(
            ORCHESTRA,
            OrchestraStart(
                version=1,
                task=run.task.name,
                budget_s=run.budget_s,
                slots=spec.slots,
                seed=spec.seed,
                main=spec.main,
                reviewer=spec.reviewer,
                worker=spec.worker,
                eval_limit=spec.eval_limit,
                final_limit=spec.final_limit,
                pid=os.getpid(),
                **optional,
            ),
            stored,
        )
        if spec.setup is not None:
            spec.setup(expos)
        run_id = expos.run.run_id
    finally:
        expos.close()
    if path.exists():
        path.rmdir()  # empty (checked by resolve_spec)
    building.rename(path)
    # The key directory is told where the run now is before anything opens it there: where an
    # earlier run at this path was deleted (a bench's campaign rerun in the same --out), the
    # newest run the key directory knows at `path` must be this one, or opening it would be
    # refused as a replaced run directory.
    keys = KeyDir(spec.key_dir)
    record = keys.record(run_id)
    if record is None:
        raise RsiMasterError(f"the key directory {keys.path} lost its record of run {run_id} while it was created")
    keys.moved(record, path)


def _drive_new(run: ResolvedRun, display: Display) -> dict[str, Any]:

    key_dir = run.spec.key_dir
    # As root the run and key directories are the harness's alone: agents joining through
    # `rsi-master agent` run as another user and reach the run only through the door.
    lock_down(run.path, KeyDir(key_dir).path)
    expos = ExpOS.open(run.path, key_dir=key_dir)
    try:
        return drive(
            _environment(expos),
            display,
            key_dir,
            resume=False,
            executor=run.spec.executor,
            ray_address=run.spec.ray_address,
            sim_speed=run.spec.sim_speed,
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
    sim_speed: float | None = None,
) -> dict[str, Any]:

    check_executor(executor, ray_address, sim_speed)
    path = Path(run_dir)
    if not is_run_dir(path):
        raise RsiMasterError(f"{path} is not a run directory (no ledger.db or ledger.pg)")
    expos = ExpOS.open(path, key_dir=key_dir)
    try:
        try:
            graph = load_graph(expos.reader)
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
        if sim_speed is not None and expos.backend.name != "sim":
            raise RsiMasterError("--sim-speed is for a simulated run (--backend sim) on --executor ray")
        return drive(
            _environment(expos),
            display or PlainDisplay(),
            key_dir,
            resume=True,
            executor=executor,
            ray_address=ray_address,
            sim_speed=sim_speed,
        )
    finally:
        expos.close()
