"""The Ray executor against the local pool: per-job overhead, and simulated campaigns of 4, 8 and 16 slots.

Every campaign is the simulated backend on the real clock (simulated training takes no time, so a
job's wall time is orchestration and ExpOS work). Per-job overhead is the job's wall time as the
scheduler records it (`orchestra.job.start` to `orchestra.job.end`) less the span of the node's
own ledger events inside it: the cost of starting the node where it runs and of noticing its end.
Ray runs a private local instance with one CPU per slot (oversubscribed on a small machine).

    .venv/bin/python benchmarks/bench_ray.py [--budget 30] [--slots 4 8 16]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import tempfile
import time
from pathlib import Path

from rsi_master.expos import ExpOS
from rsi_master.orchestra import PlainDisplay, RunSpec, load_graph, start_run
from rsi_master.orchestra._graph import parse_ts
from rsi_master.sim import generate_world


def _overheads(run_dir: Path) -> list[float]:
    with ExpOS.open(run_dir, writable=False) as x:
        g = load_graph(x.reader)
        events = [(e.actor.id, parse_ts(e.ts)) for e in x.run.ledger.events() if e.actor.role in ("worker", "reviewer")]
    out = []
    for j in g.jobs:
        if j.status != "done" or j.end_ts is None:
            continue
        own = [ts for actor, ts in events if actor == j.node and j.start_ts <= ts <= j.end_ts]
        if own:
            out.append((j.end_ts - j.start_ts) - (max(own) - min(own)))
    return out


def _campaign(root: Path, name: str, executor: str, slots: int, budget: float) -> dict[str, float]:
    t0 = time.perf_counter()
    s = start_run(
        RunSpec(
            budget=budget,
            backend="sim",
            world=generate_world(1),
            slots=slots,
            run_dir=root / name,
            executor=executor,
        ),
        display=PlainDisplay(io.StringIO()),
        durable=False,
    )
    wall = time.perf_counter() - t0
    over = _overheads(root / name)
    return {
        "wall_s": wall,
        "jobs": float(len(over)),
        "overhead_median_s": statistics.median(over) if over else float("nan"),
        "slot_utilisation": float(s.get("slot_utilisation") or 0.0),
        "experiments": float(s["experiments"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--slots", type=int, nargs="+", default=[4, 8, 16])
    args = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    from rsi_master.orchestra._ray import connect

    connect(None, num_cpus=max(args.slots))
    root = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    os.environ.setdefault("RSI_MASTER_KEY_DIR", str(root / "keys"))
    try:
        rows = [("process", 2, _campaign(root, "p2", "process", 2, args.budget))]
        rows.append(("ray", 2, _campaign(root, "r2", "ray", 2, args.budget)))
        for n in args.slots:
            rows.append(("ray", n, _campaign(root, f"r{n}", "ray", n, args.budget)))
    finally:
        ray.shutdown()
    print(f"budget {args.budget:.0f} s per campaign (simulated backend, real clock)")
    print("| executor | slots | wall s | jobs | median overhead per job s | slot utilisation | experiments |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for ex, n, r in rows:
        print(
            f"| {ex} | {n} | {r['wall_s']:.1f} | {r['jobs']:.0f} | {r['overhead_median_s']:.2f} | "
            f"{r['slot_utilisation']:.2f} | {r['experiments']:.0f} |"
        )


if __name__ == "__main__":
    main()
