"""Sealed evaluations in one process: forked from the warm Python against fresh interpreters.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_warm_eval.py [--n 5] [--task arithmetic] [--samples 20]

Evaluates the shipped base model N times on the task's `dev` split (the first SAMPLES items)
in this process, first cold (`RSI_MASTER_WARM_EVALUATOR=0`: a fresh `python -E -s -B` each
time), then warm (the first evaluation starts the zygote, the rest fork from it), and prints
wall and CPU seconds per evaluation and their ratio. CPU is every process's user and system
time: cold, the children this process waited for (`getrusage`); warm, the zygote's own and its
reaped children's (`/proc/PID/stat`), read before this process closes it. The scores of the two
must match, or the script says so and exits 1. Figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime + cutime + cstime) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5, help="evaluations each way (default 5)")
    ap.add_argument("--task", default="arithmetic")
    ap.add_argument("--samples", type=int, default=20, help="dev items per evaluation (default 20)")
    args = ap.parse_args()
    if args.n < 1 or args.samples < 1:
        raise SystemExit("bench_warm_eval: --n and --samples must be at least 1")

    from rsi_master.runtime import _warm, base_model_dir, evaluate
    from rsi_master.runtime._warm import WARM_ENV
    from rsi_master.tasks import PUBLIC_SEAL_KEY

    ckpt = base_model_dir()

    def one() -> float:
        return evaluate(ckpt, args.task, "dev", seal_key=PUBLIC_SEAL_KEY, max_samples=args.samples).score

    rows = []
    os.environ[WARM_ENV] = "0"
    t0, c0 = time.perf_counter(), _children_cpu()
    cold = [one() for _ in range(args.n)]
    rows.append(("cold (fresh interpreter)", time.perf_counter() - t0, _children_cpu() - c0))
    del os.environ[WARM_ENV]
    t0 = time.perf_counter()
    warm = [one() for _ in range(args.n)]
    wall = time.perf_counter() - t0
    z = _warm._zygote
    if z is None:
        raise SystemExit("bench_warm_eval: no zygote was started (the cold path ran)")
    rows.append(("warm (forked, first one starts the zygote)", wall, _proc_cpu(z.proc.pid)))
    print(f"{args.n} evaluations each way, task {args.task}, {args.samples} dev items, shipped base model")
    print(f"{'':44} {'wall s/eval':>11} {'CPU s/eval':>10}")
    for name, w, c in rows:
        print(f"{name:44} {w / args.n:11.2f} {c / args.n:10.2f}")
    print(f"ratio cold/warm: wall {rows[0][1] / rows[1][1]:.1f}x, CPU {rows[0][2] / max(rows[1][2], 1e-9):.1f}x")
    if cold != warm:
        print(f"scores differ: cold {cold}, warm {warm}")
        raise SystemExit(1)
    print(f"scores identical: {cold[0]:.3f}")


if __name__ == "__main__":
    main()
