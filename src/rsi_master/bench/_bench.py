"""`rsi-master bench`: every configuration on every task for every seed, then the table.

Campaigns run one at a time (they would only share the same cores), in seed-major order
so that an interrupted bench has whole seeds of every configuration; a bench started
again on the same output directory reuses finished campaigns and resumes an interrupted
one. Figures go to `bench.json`, the table to `bench.md`, the plot to `bench.png`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from ..errors import RsiMasterError
from ._campaign import CampaignResult, run_campaign
from ._configs import CONFIGS
from ._report import aggregate, markdown, plot
from ._shortcuts import ShortcutTendency

__all__ = ["FULL", "QUICK", "check_settings", "run_bench"]

# The full table: every task, three seeds, the default run's budget and evaluation size.
FULL: dict[str, Any] = {"tasks": ["arithmetic", "knowledge", "function_calling", "program_synthesis"],
                        "seeds": [0, 1, 2], "budget_s": 300.0, "eval_limit": 50, "slots": 2}
# --quick: one task (the one that moves above base soonest), three seeds, a budget that
# fits one short trial per Worker, five evaluation items per split: every configuration
# and every figure, within 15 minutes on a loaded 2-core machine. Its scores are mostly
# the base model's; it checks the machinery, not the claims.
QUICK: dict[str, Any] = {"tasks": ["knowledge"], "seeds": [0, 1, 2], "budget_s": 25.0, "eval_limit": 5, "slots": 2,
                         "max_train_steps": 20}


def check_settings(configs: list[str], tasks: list[str], seeds: list[int], budget: Any, slots: int,
                   eval_limit: int) -> float:
    """Refuse bad input with one clear line each; returns the budget in seconds."""
    from ..orchestra import parse_budget
    from ..tasks import list_tasks

    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or not configs:
        raise RsiMasterError(f"unknown configuration {', '.join(unknown) or '(none given)'}; "
                             f"known: {', '.join(CONFIGS)}")
    bad_tasks = [t for t in tasks if t not in list_tasks()]
    if bad_tasks or not tasks:
        raise RsiMasterError(f"unknown task {', '.join(bad_tasks) or '(none given)'}; known: {', '.join(list_tasks())}")
    if not seeds or any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in seeds):
        raise RsiMasterError(f"seeds must be non-negative integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise RsiMasterError(f"seeds repeat: {seeds!r}")
    if slots < 1:
        raise RsiMasterError(f"slots must be at least 1, got {slots}")
    if eval_limit < 1:
        raise RsiMasterError(f"eval limit must be at least 1, got {eval_limit}")
    return parse_budget(budget)


def run_bench(out_dir: str | Path, *, configs: list[str] | None = None, tasks: list[str] | None = None,
              seeds: list[int] | None = None, budget: Any = None, slots: int | None = None,
              eval_limit: int | None = None, quick: bool = False, tendency: ShortcutTendency | None = None,
              key_dir: str | None = None, make_plot: bool = True,
              progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    base = QUICK if quick else FULL
    configs = list(configs or CONFIGS)
    tasks = list(tasks or base["tasks"])
    seeds = list(seeds if seeds is not None else base["seeds"])
    slots = int(slots if slots is not None else base["slots"])
    eval_limit = int(eval_limit if eval_limit is not None else base["eval_limit"])
    budget_s = check_settings(configs, tasks, seeds, budget if budget is not None else base["budget_s"], slots,
                              eval_limit)
    tendency = tendency or ShortcutTendency()
    max_steps = int(base.get("max_train_steps", 400))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda s: None)
    settings = {"configs": configs, "tasks": tasks, "seeds": seeds, "budget_s": budget_s, "slots": slots,
                "eval_limit": eval_limit, "max_train_steps": max_steps, "quick": quick,
                "shortcuts": tendency.model_dump(mode="json")}
    prev = out / "settings.json"
    if prev.is_file():
        old = json.loads(prev.read_text())
        same = {k: old.get(k) for k in ("budget_s", "slots", "eval_limit", "max_train_steps", "shortcuts")}
        if same != {k: settings[k] for k in same}:
            raise RsiMasterError(f"{out} holds a bench with other settings ({same}); choose another --out")
    prev.write_text(json.dumps(settings, indent=1))
    t0 = time.time()
    results: list[CampaignResult] = []
    total = len(configs) * len(tasks) * len(seeds)
    for seed in seeds:
        for task in tasks:
            for name in configs:
                r = run_campaign(name, task, seed, budget_s, out, slots=slots, eval_limit=eval_limit,
                                 tendency=tendency, key_dir=key_dir, max_train_steps=max_steps)
                results.append(r)
                say(f"[{time.time() - t0:6.0f}s] {len(results)}/{total} {name} {task} seed {seed}: "
                    f"score {r.score:.3f} (harness final {r.harness_final:.3f}, base {r.base_score:.3f}), "
                    f"hacked {len(r.audit.hacked)}/{r.audit.submissions} submissions, "
                    f"blocked {r.audit.blocked_attempts}, executed {r.audit.executed_attempts}, "
                    f"{r.experiments} experiments, utilisation {r.slot_utilisation:.2f}, {r.wall_s:.0f}s")
    figures = aggregate(results, configs)
    table = markdown(figures)
    report = {"version": 1, "settings": settings, "figures": figures,
              "campaigns": [r.model_dump(mode="json") for r in results], "wall_s": round(time.time() - t0, 1)}
    (out / "bench.json").write_text(json.dumps(report, indent=1))
    (out / "bench.md").write_text(table)
    png = None
    if make_plot:
        png = plot(figures, out / "bench.png", f"{', '.join(tasks)}; budget {budget_s:.0f}s, {slots} slots, "
                                               f"seeds {', '.join(map(str, seeds))}")
    return {"figures": figures, "table": table, "json": str(out / "bench.json"), "markdown": str(out / "bench.md"),
            "plot": str(png) if png else None, "wall_s": report["wall_s"], "campaigns": len(results)}
