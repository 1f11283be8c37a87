"""The Main's plans on each built-in task as JSON: what it opens (`start`) at several budgets
and slot counts, and how it answers a failed review (a revise from the base) and a passing one
(revise, combine, continue).

With the shipped landscape as the run's prior (`--prior shipped`) they were captured before
the landscape became a package (issue 20) into `data/first_plans.json`, when that landscape
was every run's prior; without a prior (the default since issue 22) into
`data/first_plans_noprior.json`. `test_first_plans` checks the policy still makes every one of
these decisions the same way.

Regenerate (only for an intended change of behaviour, and say so in the commit):
    PYTHONPATH=src python -m tests.orchestra._plans shipped > tests/orchestra/data/first_plans.json
    PYTHONPATH=src python -m tests.orchestra._plans > tests/orchestra/data/first_plans_noprior.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from rsi_master.expos import Caller
from rsi_master.orchestra import MainContext, PolicyMain, load_graph
from rsi_master.tasks import list_tasks

from .helpers import MAIN, fake_experiment, finalize, new_run

OPENINGS = ((300.0, 1), (300.0, 2), (600.0, 2), (3600.0, 3))


def _ctx(expos: Any, spent: float, budget: float, slots: int) -> MainContext:
    return MainContext(expos, MAIN, budget, lambda: spent, slots)


def _plans(expos: Any, since: int = 0) -> list[dict[str, Any]]:
    """Every Worker the Main added and every decision it recorded, from event `since` on."""
    g = load_graph(expos.reader)
    items: list[tuple[int, dict[str, Any]]] = []
    for w in g.workers.values():
        if w.seq >= since:
            items.append(
                (
                    w.seq,
                    {
                        "add": w.id,
                        "task": w.task,
                        "predecessors": list(w.predecessors),
                        "direction": w.direction.model_dump(mode="json"),
                    },
                )
            )
    for d in g.decisions:
        if d.seq >= since:
            # The captures predate schema v3, where the answered event was `detail["event"]`:
            # it is put back there so that the captured plans stay byte for byte what they were.
            detail = d.detail if d.answers is None else {**d.detail, "event": d.answers}
            items.append((d.seq, {"decision": d.action, "rationale": d.rationale, "detail": detail}))
    return [x for _, x in sorted(items, key=lambda t: t[0])]


def _recipe(xid: str, direction: Any, dev: float) -> dict[str, Any]:
    return {
        "experiment_id": xid,
        "family": direction.family,
        "method": "sft",
        "params": {},
        "mix": [],
        "config": {"learning_rate": 1e-3, "batch_size": 8, "max_steps": 20},
        "parent": "base",
        "dev_score": dev,
    }


def task_plans(task: str, root: Path, prior: Any = None) -> dict[str, Any]:
    from rsi_master.orchestra import default_budget, resolve_task_ref

    out: dict[str, Any] = {"default budget": default_budget(resolve_task_ref(task))}
    for budget, slots in OPENINGS:
        with new_run(
            root, task, budget_s=budget, slots=slots, name=f"open-{int(budget)}-{slots}", prior=prior
        ) as expos:
            PolicyMain().start(_ctx(expos, 0.0, budget, slots), load_graph(expos.reader))
            out[f"start {int(budget)}s {slots} slots"] = _plans(expos)
    budget = 1000.0
    with new_run(root, task, budget_s=budget, name="fail", prior=prior) as expos:
        main = PolicyMain()
        main.start(_ctx(expos, 0.0, budget, 2), load_graph(expos.reader))
        w1, w2 = sorted(load_graph(expos.reader).workers)
        expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": [w1, w2]})
        rev = expos.call(
            Caller("reviewer", "r1"),
            "review.submit",
            {"scope": [w1, w2], "verdict": "fail", "violations": [f"{w1} claims something unsupported"]},
        ).seq
        main.on_event(_ctx(expos, 30.0, budget, 2), load_graph(expos.reader), (rev, "review", "r1"))
        out["failed review"] = _plans(expos, rev)
    with new_run(root, task, budget_s=budget, name="pass", prior=prior) as expos:
        main = PolicyMain()
        main.start(_ctx(expos, 0.0, budget, 2), load_graph(expos.reader))
        g = load_graph(expos.reader)
        w1, w2 = sorted(g.workers)
        x1 = fake_experiment(expos, w1, 0.5, review=0.4)
        s1 = finalize(expos, w1, x1, 0.5, _recipe(x1, g.workers[w1].direction, 0.5))
        x2 = fake_experiment(expos, w2, 0.3, review=0.35)
        s2 = finalize(expos, w2, x2, 0.3, _recipe(x2, g.workers[w2].direction, 0.3))
        expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": [w1, w2]})
        rev = expos.call(
            Caller("reviewer", "r1"),
            "review.submit",
            {
                "scope": [w1, w2],
                "verdict": "pass",
                "supported": [f"{w1}: {x1} review 0.400"],
                "recommendations": [
                    {"action": "continue", "experiment_id": x1, "worker_id": w1, "reason": "train it further"},
                    {
                        "action": "combine",
                        "worker_ids": [w1, w2],
                        "experiment_ids": [x1, x2],
                        "reason": f"{x2} solves samples that {x1} misses",
                    },
                ],
                "evidence": [s1, s2],
            },
        ).seq
        main.on_event(_ctx(expos, 40.0, budget, 2), load_graph(expos.reader), (rev, "review", "r1"))
        main.on_idle(_ctx(expos, 45.0, budget, 2), load_graph(expos.reader), 1)
        main.on_idle(_ctx(expos, 50.0, budget, 2), load_graph(expos.reader), 1)
        main.on_idle(_ctx(expos, 800.0, budget, 2), load_graph(expos.reader), 1)
        out["passed review"] = _plans(expos, rev)
    return out


BUILT_IN = ("arithmetic", "function_calling", "knowledge", "program_synthesis")


def all_plans(root: Path, prior: Any = None) -> dict[str, Any]:
    return {task: task_plans(task, root / task, prior) for task in sorted(t for t in list_tasks() if t in BUILT_IN)}


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        print(json.dumps(all_plans(Path(d), sys.argv[1] if len(sys.argv) > 1 else None), indent=1, sort_keys=True))
