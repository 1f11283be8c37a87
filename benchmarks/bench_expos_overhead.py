"""ExpOS overhead on one SFT experiment: the same run through `experiment.submit` and through
the runtime directly, repeated, medians compared.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_expos_overhead.py [--n 512 --repeat 5]

Both sides train the same stored dataset from the base model with the same SFT spec and
score the result on the contract's `dev` samples with the sealed evaluator. The runtime
side is `train` then `evaluate` (which already copy and hash their inputs privately). The
ExpOS side adds the door (role, override and input checks), the guards (lineage, budget,
the dataset read once, hashed and contamination-checked again, the parent and the new
checkpoint measured before use, measured digests compared with the claimed ones), moving
outputs into the store and the ledger events. Rounds alternate which side goes first, so
drift in machine load falls on both. Target: ExpOS / runtime <= 1.02.

Two figures, because wall-time noise on a shared machine is of the order of the target:
the ratio of the medians, and ExpOS's own time (the call's wall time less the time spent
inside `train` and `evaluate`, timed in the same call) as a fraction of the call.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="arithmetic")
    ap.add_argument("--family", default="answer_only")
    ap.add_argument("--n", type=int, default=512, help="training rows (default SFT spec: batch 32, one epoch)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import rsi_master.runtime as runtime
    from rsi_master.artifacts import copy_measured
    from rsi_master.expos import Budget, Caller, ExpOS
    from rsi_master.runtime import base_model_dir, make_spec

    root = Path(tempfile.mkdtemp(prefix="bench-expos-overhead-"))
    os.environ["RSI_MASTER_KEY_DIR"] = str(root / "keys")
    expos = ExpOS.create(root / "run", args.task, budget=Budget(max_experiments=1000, max_train_steps=100_000))
    c = expos.contract
    worker = Caller("worker", "bench")
    dataset = expos.call(worker, "data.generate", {"family": args.family, "n": args.n, "seed": 0}).dataset
    data_path = expos.run.store.path(dataset)
    spec = make_spec(method="sft", task=args.task)
    n_dev = len(c.evaluator.sample_ids["dev"])
    train, evaluate = runtime.train, runtime.evaluate

    # What measuring costs by itself: one private copy of the base checkpoint, hashed as written.
    copies = []
    for i in range(5):
        t = time.perf_counter()
        copy_measured(base_model_dir(), root / f"copy-{i}")
        copies.append(time.perf_counter() - t)
    ckpt_mb = sum(p.stat().st_size for p in base_model_dir().iterdir()) / 1e6

    inner: list[float] = []

    def timed(fn):
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                inner.append(time.perf_counter() - t0)

        return wrapper

    runtime.train, runtime.evaluate = timed(train), timed(evaluate)  # ExpOS imports them at call time

    def bare() -> float:
        t = time.perf_counter()
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            res = train(data_path, Path(tmp) / "out", spec, parent=base_model_dir())
            evaluate(
                res.checkpoint_dir,
                c.task,
                "dev",
                expected_evaluator_digest=c.evaluator.evaluator_digest,
                store=expos.run.store,
                max_samples=n_dev,
                batch_size=c.eval_batch_size,
                seal_key=expos.seal_key(),
            )
        return time.perf_counter() - t

    def guarded() -> tuple[float, float]:
        inner.clear()
        t = time.perf_counter()
        result = expos.call(worker, "experiment.submit", {"dataset": dataset, "config": {}})
        wall = time.perf_counter() - t
        assert result.status == "completed", result
        return wall, wall - sum(inner)

    import torch  # noqa: F401  (warm imports and caches for both sides before timing)

    bare()
    guarded()
    b, g, own = [], [], []
    for i in range(args.repeat):
        order = ("bare", "expos") if i % 2 == 0 else ("expos", "bare")
        for side in order:
            if side == "bare":
                b.append(bare())
            else:
                wall, mine = guarded()
                g.append(wall)
                own.append(mine)
        print(f"round {i}: runtime {b[-1]:.2f} s, expos {g[-1]:.2f} s (own {own[-1]:.3f} s)", flush=True)
    expos.close()
    mb, mg, mo = statistics.median(b), statistics.median(g), statistics.median(own)
    ratio, frac = mg / mb, mo / mg
    print(
        f"command: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '')} "
        f"{shlex.join([Path(sys.executable).name, *sys.argv])}"
    )
    print("---")
    print(f"experiment: {args.task}/{args.family}, {args.n} rows, default SFT spec, {n_dev} dev samples")
    print(f"repeats: {args.repeat} (after one warm-up round each)")
    print(f"runtime_median_s: {mb:.2f}")
    print(f"expos_median_s: {mg:.2f}")
    print(f"ratio_expos_over_runtime: {ratio:.4f}  (target <= 1.02: {'met' if ratio <= 1.02 else 'NOT met'})")
    print(f"expos_own_median_s: {mo:.3f}")
    print(f"expos_own_fraction: {frac:.4f}  (target <= 0.02: {'met' if frac <= 0.02 else 'NOT met'})")
    print(f"measured_copy_of_base_checkpoint_ms: {1000 * statistics.median(copies):.1f}  ({ckpt_mb:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
