"""What a Ray task's append costs now that the driver's keeper signs its heads.

One event appended at a time (as a node records its calls), `--events` of them, by: a writer
holding the key directory (a slot process, the harness); a writer whose heads a keeper in the
same process signs (the keeper's checks without Ray); and a Ray task whose heads the keeper actor
on the driver's node signs (two calls to the actor per append: sign, then publish the witness).
Ray is a private local instance. Medians and 90th percentiles of the seconds per append.

    .venv/bin/python benchmarks/bench_keeper.py [--events 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rsi_master.expos import ExpOS


def _appends(run_dir: str, key_dir: Any, token: str, n: int) -> list[float]:
    out = []
    with ExpOS.open(run_dir, key_dir=key_dir) as x:
        caller = x.authenticate(token)
        for i in range(n):
            t0 = time.perf_counter()
            x.run.record({"kind": "bench.note", "actor": caller.actor(), "payload": {"i": i}})
            out.append(time.perf_counter() - t0)
    return out


def _in_task(run_dir: str, token: str, keeper: Any, n: int) -> list[float]:
    import ray

    from rsi_master.orchestra._keeper import DriverKeys
    from rsi_master.orchestra._ray import keeper_call

    return _appends(run_dir, DriverKeys(keeper_call(ray, keeper), token), token, n)


def _row(name: str, times: list[float]) -> str:
    q = statistics.quantiles(times, n=10)
    return f"| {name} | {len(times)} | {statistics.median(times) * 1000:.1f} | {q[-1] * 1000:.1f} |"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200)
    args = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    root = Path(tempfile.mkdtemp(prefix="bench-keeper-"))
    keys = root / "keys"
    os.environ["RSI_MASTER_KEY_DIR"] = str(keys)
    with ExpOS.create(root / "run", "knowledge", eval_limit=5) as x:
        token = x.issue("worker", "w1")
    run_dir = str(root / "run")
    rows = [_row("key directory (slot process)", _appends(run_dir, None, token, args.events))]

    from rsi_master.orchestra._keeper import DriverKeys, KeyKeeper, local_call

    keeper = KeyKeeper(run_dir, str(keys))
    try:
        rows.append(
            _row("keeper in this process", _appends(run_dir, DriverKeys(local_call(keeper), token), token, args.events))
        )
    finally:
        keeper.close()

    import ray

    from rsi_master.orchestra._ray import RayExecutor

    ray.init(address="local", num_cpus=2, include_dashboard=False)  # private, even beside another cluster here
    executor = RayExecutor()
    try:
        handle = executor.keeper(run_dir, str(keys))
        task = ray.remote(_in_task).options(num_cpus=1)
        ray.get(task.remote(run_dir, token, handle, 5))  # a worker process started and the stack imported
        rows.append(_row("Ray task, keeper actor", ray.get(task.remote(run_dir, token, handle, args.events))))
    finally:
        executor.close()
        ray.shutdown()
    print("| writer | appends | median ms | p90 ms |")
    print("| --- | --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
