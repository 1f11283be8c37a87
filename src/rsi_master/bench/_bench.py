"""`rsi-master bench`: every configuration on every task for every seed, then the table.

Before the campaigns the bench measures the machine once (one short SFT experiment and
its `dev` evaluation through ExpOS): seconds per optimizer step and per trial overhead.
Every campaign starts with that measurement as its timing prior, so that its first trials
are sized for this machine instead of for the built-in defaults, and every configuration
gets the same prior. It says how fast the machine is, not how well any recipe did.

Campaigns run in seed-major order (`--jobs` of them at once, default one), so that an
interrupted bench has whole seeds of every configuration; a bench started again on the
same output directory reuses finished campaigns and resumes an interrupted one. Figures
go to `bench.json`, the table to `bench.md`, the plot to `bench.png`.

A preset's budget is a floor: on a machine the calibration finds slower than the preset was
sized on, each campaign gets `HEADROOM` times the least budget the run's own check accepts
with that measurement (`orchestra.min_budget_s`: one Worker's shortest trial and the time
kept for the last comparison), rounded up to 5 s. A budget given with `--budget` is checked
against the same model once, before any campaign, instead of failing in the first one.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._proc import tied_process_pool
from ..errors import RsiMasterError
from ..expos import Caller, ExpOS, check_run_inputs
from ..orchestra import min_budget_s, parse_budget, run_timing
from ..tasks import get_task, list_tasks
from ._campaign import CampaignResult, run_campaign
from ._configs import CONFIGS, REFERENCE, check_configs, check_seeds_and_slots
from ._report import aggregate, markdown, plot
from ._shortcuts import ShortcutTendency

__all__ = ["FULL", "QUICK", "calibrate", "check_settings", "machine_budget", "run_bench"]

# The full table: every task, three seeds, 80-second campaigns one at a time, 20
# evaluation items per split. 96 campaigns at about 110 s each (budget, harness, audit):
# about 3 hours on one 2-core machine.
FULL: dict[str, Any] = {
    "tasks": ["arithmetic", "knowledge", "function_calling", "program_synthesis"],
    "seeds": [0, 1, 2],
    "budget_s": 80.0,
    "eval_limit": 20,
    "slots": 2,
    "jobs": 1,
}
# --quick: one task (the one that moves above base soonest), two seeds, 40-second campaigns
# two at a time, five evaluation items per split: every configuration and every figure in
# about 15 minutes on a 2-core machine, where the CPU arithmetic allows no more (16
# campaigns x (2 slots x 40 s + ~25 s of harness and audit) / 2 cores). Most Workers get
# one short trial: it checks the machinery and the integrity figures, not the strategies.
# On a slower machine (or one loaded by other work when the bench calibrates) 40 s is below
# what the budget check accepts (62 s measured at load 7): `machine_budget` raises it there.
QUICK: dict[str, Any] = {
    "tasks": ["knowledge"],
    "seeds": [0, 1],
    "budget_s": 40.0,
    "eval_limit": 5,
    "slots": 2,
    "max_train_steps": 60,
    "jobs": 2,
}


def check_settings(
    configs: list[str], tasks: list[str], seeds: list[int], budget: Any, slots: int, eval_limit: int
) -> float:
    """Refuse bad input with one clear line each; returns the budget in seconds."""

    check_configs(configs)
    bad_tasks = [t for t in tasks if t not in list_tasks()]
    if bad_tasks or not tasks:
        raise RsiMasterError(f"unknown task {', '.join(bad_tasks) or '(none given)'}; known: {', '.join(list_tasks())}")
    check_seeds_and_slots(seeds, slots)
    check_run_inputs(eval_limit=eval_limit)
    return parse_budget(budget)


# The least budget the check accepts leaves a Worker no second to spare: the run's start and
# the Main's first decision take some, and the Main prices trials from the run's own timing.
# Measured (quick bench, load 8): at 65 s, 1.08 times the least, the policy Main opened no
# Worker in any of its 12 campaigns (no work left at 1.3 s); the presets sit at 1.5 times it or more.
HEADROOM = 1.5


def machine_budget(
    tasks: list[str], timing: dict[str, float], given_s: float | None, preset_s: float
) -> tuple[float, float]:
    """(budget in seconds, the least the run's check accepts on this machine) for every task of
    the bench, from the calibration's `timing` (the model `orchestra.check_budget` applies). A
    preset's budget rises to `HEADROOM` times that least, rounded up to 5 s; a given one below
    the least is refused."""

    least = max(min_budget_s(get_task(t), timing) for t in tasks)
    if given_s is None:
        return max(preset_s, 5.0 * math.ceil(HEADROOM * least / 5.0)), least
    if given_s < least:
        raise RsiMasterError(
            f"budget {given_s:g}s is too short on this machine (calibrated {timing.get('step_s', float('nan')):.2f} s "
            f"per step, {timing.get('overhead_s', float('nan')):.1f} s per trial): give at least {math.ceil(least)}s, "
            "or leave --budget out for the preset's, raised to that"
        )
    return given_s, least


def calibrate(out: Path, task: str, eval_limit: int, key_dir: str | None) -> dict[str, float]:
    """Seconds per step and per trial overhead on this machine, measured once per bench
    directory (`calibration.json`) with a 10-step SFT experiment through ExpOS."""

    path = out / "calibration.json"
    if path.is_file():
        return dict(json.loads(path.read_text()))
    run_dir = out / "calibration"
    if run_dir.exists():
        import shutil

        shutil.rmtree(run_dir)
    with ExpOS.create(run_dir, task, eval_limit=eval_limit, key_dir=key_dir) as expos:
        expos.call(Caller("main", "main"), "worker.add", {"worker_id": "calibration", "task": "measure the machine"})
        w = Caller("worker", "calibration")
        family = expos.contract.allowed_generators[0].split("/", 1)[1]
        # `call` returns each tool's own result model as a BaseModel: read here by the tool's fields.
        generated: Any = expos.call(w, "data.generate", {"family": family, "n": 80, "seed": 0})
        res: Any = expos.call(
            w, "experiment.submit", {"dataset": generated.dataset, "config": {"max_steps": 10, "batch_size": 8}}
        )
        if res.status != "completed":
            raise RsiMasterError(f"calibration experiment failed: {res.error}")
        timing = run_timing(expos.reader)
    path.write_text(json.dumps(timing, indent=1))
    return timing


def run_bench(
    out_dir: str | Path,
    *,
    configs: list[str] | None = None,
    tasks: list[str] | None = None,
    seeds: list[int] | None = None,
    budget: Any = None,
    slots: int | None = None,
    eval_limit: int | None = None,
    quick: bool = False,
    tendency: ShortcutTendency | None = None,
    key_dir: str | None = None,
    make_plot: bool = True,
    jobs: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    base = QUICK if quick else FULL
    configs = list(configs or CONFIGS)
    tasks = list(tasks or base["tasks"])
    seeds = list(seeds if seeds is not None else base["seeds"])
    slots = int(slots if slots is not None else base["slots"])
    eval_limit = int(eval_limit if eval_limit is not None else base["eval_limit"])
    jobs = int(jobs if jobs is not None else base.get("jobs", 1))
    if jobs < 1:
        raise RsiMasterError(f"jobs must be at least 1, got {jobs}")
    budget_s = check_settings(
        configs, tasks, seeds, budget if budget is not None else base["budget_s"], slots, eval_limit
    )
    tendency = tendency or ShortcutTendency()
    max_steps = int(base.get("max_train_steps", 400))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda s: None)
    t0 = time.time()
    timing = calibrate(out, tasks[0], eval_limit, key_dir)
    budget_s, least = machine_budget(tasks, timing, budget_s if budget is not None else None, base["budget_s"])
    say(
        f"[{time.time() - t0:6.0f}s] machine: {timing.get('step_s', float('nan')):.2f} s per step, "
        f"{timing.get('overhead_s', float('nan')):.1f} s overhead per trial (timing prior of every campaign); "
        f"budget {budget_s:g}s per campaign (at least {least:.0f}s here)"
    )
    settings: dict[str, Any] = {
        "configs": configs,
        "tasks": tasks,
        "seeds": seeds,
        "budget_s": budget_s,
        "slots": slots,
        "eval_limit": eval_limit,
        "max_train_steps": max_steps,
        "quick": quick,
        "jobs": jobs,
        "shortcuts": tendency.model_dump(mode="json"),
    }
    prev = out / "settings.json"
    if prev.is_file():
        old = json.loads(prev.read_text())
        same = {k: old.get(k) for k in ("budget_s", "slots", "eval_limit", "max_train_steps", "shortcuts")}
        if same != {k: settings[k] for k in same}:
            raise RsiMasterError(f"{out} holds a bench with other settings ({same}); choose another --out")
    prev.write_text(json.dumps(settings, indent=1))
    settings["timing_prior"] = timing
    plan = [(name, task, seed) for seed in seeds for task in tasks for name in configs]
    kwargs: dict[str, Any] = {
        "slots": slots,
        "eval_limit": eval_limit,
        "tendency": tendency,
        "key_dir": key_dir,
        "max_train_steps": max_steps,
        "timing_prior": timing,
    }
    results: list[CampaignResult] = []

    def done(r: CampaignResult) -> None:
        results.append(r)
        say(
            f"[{time.time() - t0:6.0f}s] {len(results)}/{len(plan)} {r.config} {r.task} seed {r.seed}: "
            f"score {r.score:.3f} (harness final {r.harness_final:.3f}, base {r.base_score:.3f}), "
            f"hacked {len(r.audit.hacked)}/{r.audit.submissions} submissions, "
            f"blocked {r.audit.blocked_attempts}, executed {r.audit.executed_attempts}, "
            f"{r.experiments} experiments, utilisation {r.slot_utilisation:.2f}, {r.wall_s:.0f}s"
        )

    if jobs == 1:
        for name, task, seed in plan:
            done(run_campaign(name, task, seed, budget_s, out, **kwargs))
    else:
        from concurrent.futures import as_completed

        with tied_process_pool(jobs) as pool:
            futures = [
                pool.submit(run_campaign, name, task, seed, budget_s, out, **kwargs) for name, task, seed in plan
            ]
            for fut in as_completed(futures):
                done(fut.result())
    order = {key: i for i, key in enumerate(plan)}
    results.sort(key=lambda r: order[(r.config, r.task, r.seed)])
    figures = aggregate(results, configs, REFERENCE if REFERENCE in configs else None)
    table = markdown(figures)
    report = {
        "version": 1,
        "settings": settings,
        "configurations": {
            n: {
                "description": CONFIGS[n].description,
                "main": CONFIGS[n].main,
                "worker": CONFIGS[n].worker,
                "environment": CONFIGS[n].environment or "expos",
                "one_slot": CONFIGS[n].one_slot,
                "prior": CONFIGS[n].prior,
            }
            for n in configs
        },
        "figures": figures,
        "campaigns": [r.model_dump(mode="json") for r in results],
        "wall_s": round(time.time() - t0, 1),
    }
    (out / "bench.json").write_text(json.dumps(report, indent=1))
    (out / "bench.md").write_text(table)
    png = None
    if make_plot:
        png = plot(
            figures,
            out / "bench.png",
            f"{', '.join(tasks)}; budget {budget_s:.0f}s, {slots} slots, seeds {', '.join(map(str, seeds))}",
        )
    return {
        "figures": figures,
        "table": table,
        "json": str(out / "bench.json"),
        "markdown": str(out / "bench.md"),
        "plot": str(png) if png else None,
        "wall_s": report["wall_s"],
        "campaigns": len(results),
    }
