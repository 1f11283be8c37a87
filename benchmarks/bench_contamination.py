"""Contamination check throughput: MB of training text per CPU-second against 10,000 items.

Protected set: every dev/review/final item of the four tasks (2,400) plus items drawn
from the tasks' own generator families (seed 1) up to 10,000, so that the index has the
size the issue names. Training text: rows from every generator family (seed 2), about
50 MB. Figures are CPU seconds of this process (time.process_time), i.e. per core: the
check is single-threaded, and CPU time is less disturbed than wall time on a shared
machine. Wall time is printed too.

    .venv/bin/python benchmarks/bench_contamination.py [--mb 50] [--items 10000]
"""

from __future__ import annotations

import argparse
import sys
import time

from rsi_master.expos.contamination import ProtectedItem, build_index, check, protected_items
from rsi_master.tasks import get_task, list_tasks

TARGET_MB_PER_S = 20.0  # from issue 4


def _protected(total: int) -> list[ProtectedItem]:
    items = [item for name in list_tasks() for item in protected_items(get_task(name))]
    names = list_tasks()
    k = 0
    while len(items) < total:
        task = get_task(names[k % len(names)])
        for family in task.generators().values():
            for row in family.generate(None, 1, 200):
                if len(items) >= total:
                    break
                items.append(ProtectedItem("final", f"extra/{task.name}/{k:05d}", (("prompt", row["prompt"]),)))
                k += 1
            break  # one family per round: the prompts are the same across families of a task
    return items


def _training_rows(megabytes: float) -> list[dict]:
    rows: list[dict] = []
    size = 0
    seed = 2
    while size < megabytes * 1e6:
        for name in list_tasks():
            for family in get_task(name).generators().values():
                for row in family.generate(None, seed, 500):
                    rows.append({"prompt": row["prompt"], "completion": row["completion"]})
                    size += len(row["prompt"]) + len(row["completion"])
        seed += 1
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="training text to check, in MB")
    parser.add_argument("--items", type=int, default=10_000, help="protected items in the index")
    args = parser.parse_args()
    items = _protected(args.items)
    rows = _training_rows(args.mb)
    cpu = time.process_time()
    import datasketch  # noqa: F401 - a one-off import (scipy comes with it), timed on its own

    import_cpu = time.process_time() - cpu
    cpu, wall = time.process_time(), time.perf_counter()
    index = build_index(items)
    build_cpu, build_wall = time.process_time() - cpu, time.perf_counter() - wall
    cpu, wall = time.process_time(), time.perf_counter()
    report = check(index, rows)
    check_cpu, check_wall = time.process_time() - cpu, time.perf_counter() - wall
    mb = report.chars / 1e6
    rate = mb / check_cpu
    print("---")
    print("command: .venv/bin/python benchmarks/bench_contamination.py " + " ".join(sys.argv[1:]))
    print(f"protected_items: {index.n_items}")
    print(f"protected_texts: {index.n_texts}")
    print(f"datasketch_import_cpu_s: {import_cpu:.2f}")
    print(f"build_cpu_s: {build_cpu:.2f}")
    print(f"build_wall_s: {build_wall:.2f}")
    print(f"rows: {report.rows}")
    print(f"mb: {mb:.1f}")
    print(f"check_cpu_s: {check_cpu:.2f}")
    print(f"check_wall_s: {check_wall:.2f}")
    print(f"mb_per_cpu_s: {rate:.1f}")
    print(f"mb_per_wall_s: {mb / check_wall:.1f}")
    print(f"rows_failed: {report.rows_failed}")
    print(f"rows_flagged: {report.rows_flagged}")
    print(f"target_mb_per_s: {TARGET_MB_PER_S}")
    print(f"target_met: {rate >= TARGET_MB_PER_S}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
