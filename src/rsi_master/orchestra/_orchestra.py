"""`run` and `resume`: create or reopen an orchestrated run, drive it, close it with the
harness's selection, its single `final` scoring and a JSON summary stored in the run."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import RsiMasterError
from ..events import OrchestraFinish, OrchestraStart
from ._display import Display, PlainDisplay
from ._graph import ORCHESTRA, load_graph

if TYPE_CHECKING:
    from ..landscape import Landscape

__all__ = ["DEFAULTS", "default_budget", "parse_budget", "resume_run", "start_run"]

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
        what = "a run" if (path / "ledger.db").exists() else "files"
        raise RsiMasterError(
            f"{path} already holds {what}; nothing was overwritten (resume it with "
            f"`rsi-master resume {path}` or choose another --dir)"
        )


def start_run(
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
    (`orchestra.start`'s `prior` names it)."""
    from ..expos import Budget, ExpOS
    from ..tasks import UnknownTaskError, list_tasks, resolve_task

    # A built-in task's name or a task directory's path (TaskInputError, one line, for a bad one);
    # a directory is read once here and the run is frozen from those bytes.
    try:
        given = resolve_task(task)
    except UnknownTaskError:
        raise RsiMasterError(
            f"unknown task {task!r}; known: {', '.join(list_tasks())}, or the path of a task directory"
        ) from None
    task = given.name
    budget_s = parse_budget(default_budget(task) if budget is None else budget)
    if slots < 1:
        raise RsiMasterError(f"slots must be at least 1, got {slots}")
    from ..expos import KEEP_POLICIES
    from ..runtime import InvalidParameterError, check_backend, make_backend
    from ._gpus import assign_devices

    if keep not in KEEP_POLICIES:
        raise RsiMasterError(f"unknown --keep policy {keep!r}; known: {', '.join(KEEP_POLICIES)}")
    assign_devices(slots, gpus_per_slot)  # too few GPUs fails before anything is written
    try:
        backend = make_backend(eval_backend)
        check_backend(backend)
    except InvalidParameterError as exc:
        raise RsiMasterError(str(exc)) from None
    source = None
    if model is not None:
        from ..runtime import resolve_model

        source = resolve_model(model)  # a bad model fails before anything is written
    from ._prior import read_prior, store_prior

    prior_land = read_prior(prior) if prior is not None else None  # a bad file: one line, nothing written
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
        budget=Budget(wall_seconds=budget_s, max_train_steps=max_train_steps),
        eval_limit=eval_limit,
        final_limit=final_limit,
        key_dir=key_dir,
        guards=guards,
        eval_backend=backend,
        model=source,
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
        return _drive(_environment(expos), display or PlainDisplay(), key_dir, resume=False)
    finally:
        expos.close()


def resume_run(run_dir: str | Path, *, key_dir: str | None = None, display: Display | None = None) -> dict[str, Any]:
    from ..expos import ExpOS

    path = Path(run_dir)
    if not (path / "ledger.db").is_file():
        raise RsiMasterError(f"{path} is not a run directory (no ledger.db)")
    expos = ExpOS.open(path, key_dir=key_dir)
    try:
        graph = load_graph(expos)
        if not graph.sessions:
            raise RsiMasterError(f"{path} is an ExpOS run that `rsi-master run` did not start: nothing to resume")
        if graph.finished is not None:
            raise RsiMasterError(
                f"{path} already finished (event {graph.finished.seq}); nothing to resume. "
                f"`rsi-master audit {path}` and `rsi-master verify {path}` read it"
            )
        from ._protocols import environment as _environment

        return _drive(_environment(expos), display or PlainDisplay(), key_dir, resume=True)
    finally:
        expos.close()


def _drive(expos: Any, display: Display, key_dir: str | None, *, resume: bool) -> dict[str, Any]:
    from ._scheduler import Scheduler

    sched = Scheduler(expos, display, key_dir=key_dir)
    try:
        if resume:
            sched.resume()
        else:
            sched.start()
        reason = sched.drive()
        graph = load_graph(expos)
        if not any(
            d.action == "stop" and d.seq > (graph.stopped.seq if graph.stopped is not None else -1)
            for d in graph.decisions
        ):
            sched.main.finish(sched.main_ctx(), graph, reason)
        display.line("harness: selecting on review, scoring once on final")
        return _close(expos, sched)
    finally:
        display.close()


def _close(expos: Any, sched: Any) -> dict[str, Any]:
    from ..expos import audit, boundary_statement, load_state
    from ._harness import final_scores, select
    from ._metrics import run_metrics

    selection = select(expos)
    scores = final_scores(expos, selection)
    report = audit(expos)
    st = load_state(expos)
    graph = load_graph(expos)
    ref = _reference_score(expos.contract.task)
    metrics = run_metrics(expos, graph)
    pruned = _prune(expos, sched.cfg.keep or "all")
    summary = {
        "version": 1,
        "task": expos.contract.task,
        "run_id": expos.run.run_id,
        "final_score": scores["final_score"],
        "base_score": scores["base_score"],
        "reference_score": ref,
        "selected": selection["selected"],
        "selected_review_score": selection["review_score"],
        "hacking_rate": report.hacking_rate,
        "interception_rate": report.interception_rate,
        "blocked_attempts": report.blocked_attempts,
        "flagged": report.flagged,
        "run_dir_issues": report.run_dir_issues,
        "experiments": len(st.experiments),
        "experiments_by_status": _count(
            x.status if x.id not in graph.interrupted_experiments else "interrupted" for x in st.experiments.values()
        ),
        "workers": len(graph.workers),
        "reviews": sum(1 for r in graph.reviewers.values() if r.done),
        "cross_worker_reviews": sum(1 for r in graph.reviewers.values() if r.done and r.cross_worker),
        "decisions": len(graph.decisions),
        "edges": len(graph.edges()),
        # Budget clock when the agents stopped (the harness's selection and `final` scoring come after).
        "budget_s": sched.budget_s,
        "spent_s": round(graph.stopped.payload.spent_s if graph.stopped is not None else 0.0, 3),
        "wall_s": round(graph.spent_seconds(), 3),
        "slots": sched.slots,
        "eval_samples": {k: len(v) for k, v in expos.contract.evaluator.sample_ids.items()},
        # What holds against an agent with a shell in this deployment (docs/expos.md, threat model).
        "trust_boundary": boundary_statement(),
        "pruned_checkpoints": pruned,
        **metrics,
    }
    tmp = Path(expos.scratch()) / "orchestra_summary.json"
    tmp.write_text(json.dumps(summary, indent=1, sort_keys=True))
    digest = expos.run.store.put_file(tmp, move=True)
    expos.drop_scratch(tmp.parent)
    expos.record(
        ORCHESTRA,
        OrchestraFinish(summary=digest, final_score=summary["final_score"]),
        [{"digest": digest, "role": "output", "name": "orchestra_summary"}],
    )
    summary["summary_json"] = str(expos.run.store.path(digest))
    summary["run_dir"] = str(expos.run.path)
    return summary


def _prune(expos: Any, policy: str) -> int:
    """Apply the keep policy once (a resumed close finds the earlier record); checkpoints pruned."""
    from ..events import ArtifactPrune, typed
    from ..expos import prune_checkpoints
    from ._harness import HARNESS

    done = expos.own_events("artifact.prune")
    if done:
        return sum(len(typed(e, ArtifactPrune).payload.pruned) for e in done)
    payload = prune_checkpoints(expos, HARNESS, policy)
    return 0 if payload is None else len(payload.pruned)


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return dict(sorted(out.items()))


def _reference_score(task: str) -> float | None:
    """The reference recipe's `final` score as measured by the landscape study (on the whole
    split, whereas a run scores the first `eval_limit` items), once it recorded one."""
    from ..landscape import load

    t = load().tasks.get(task)
    ref = t.reference if t is not None else None
    return ref.score_final if ref is not None else None
