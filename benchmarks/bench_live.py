"""The live view's cost per update on a simulated campaign.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_live.py [--budget 10h] [--updates 20]

Runs a simulated campaign (`--backend sim`, the clock simulated), opens it as `rsi-master serve`
does (`LiveRuns`), takes the first look, then appends one Worker at a time through a writable
session and times the look that follows each (what a page's stream costs per new event): the
projection and the view's fold take in the new event, verify and the audit are not re-run
(`LiveRun.checks` stays 1), and each figure due is handed to the figure thread. For a long run,
see `bench_live_100k.py`. Prints the ledger size, the first look and the mean and max
update; run at two budgets to see how an update's cost grows with the run.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", default="10h")
    ap.add_argument("--updates", type=int, default=20)
    ap.add_argument(
        "--recheck", action="store_true", help="re-run verify and the audit at every update (the view's former cost)"
    )
    ap.add_argument("--profile", action="store_true", help="print where the updates' time goes (cProfile)")
    args = ap.parse_args()

    from rsi_master.events import WorkerAdd
    from rsi_master.expos import ExpOS
    from rsi_master.orchestra import PlainDisplay, RunSpec, start_run
    from rsi_master.sim import generate_world
    from rsi_master.views import live as live_module
    from rsi_master.views.live import SWITCH_S, LiveRuns

    if args.recheck:
        live_module.CHECK_S = 0.0

    sys.setswitchinterval(SWITCH_S)  # as the server sets it while it serves
    root = Path(tempfile.mkdtemp(prefix="bench-live-"))
    runs, keys = root / "runs", root / "keys"
    t = time.perf_counter()
    spec = RunSpec(
        budget=args.budget,
        backend="sim",
        world=generate_world(0),
        slots=2,
        seed=0,
        run_dir=runs / "run",
        key_dir=str(keys),
    )
    start_run(spec, display=PlainDisplay(io.StringIO()), durable=False)
    print(f"simulated campaign ({args.budget}): {time.perf_counter() - t:.1f} s")
    live = LiveRuns(runs, str(keys))
    try:
        t = time.perf_counter()
        first = live.pool.submit(live.refresh, "run").result()
        assert first is not None
        print(f"events {first.size}; first look (fold, verify, audit, figures): {time.perf_counter() - t:.3f} s")
        times = []
        prof = cProfile.Profile() if args.profile else None
        with ExpOS.open(runs / "run", key_dir=str(keys)) as writer:
            for i in range(args.updates):
                writer.record(
                    {"role": "main", "id": "main"},
                    WorkerAdd(worker_id=f"bench-{i}", task="t", direction={"family": "x"}, predecessors=[]),
                )
                t = time.perf_counter()
                after = live.pool.submit(_timed, live.refresh, prof).result()
                times.append(time.perf_counter() - t)
                assert after is not None and (args.recheck or after.checks == 1)
        print(
            f"update after one new event: mean {statistics.fmean(times) * 1000:.1f} ms, "
            f"max {max(times) * 1000:.1f} ms over {len(times)} (verify+audit passes: {after.checks})"
        )
        if prof is not None:
            pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    finally:
        live.close()
    return 0


def _timed(refresh: Callable[[str], T], prof: cProfile.Profile | None) -> T:
    if prof is None:
        return refresh("run")
    prof.enable()
    try:
        return refresh("run")
    finally:
        prof.disable()


if __name__ == "__main__":
    raise SystemExit(main())
