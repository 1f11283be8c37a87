"""ExpOS overhead: one default SFT experiment through ExpOS versus the bare runtime calls.

    .venv/bin/python benchmarks/bench_expos.py [--task arithmetic --family scratchpad --n 5000 --repeat 1]

Both sides train the same registered dataset with the runtime's default SFT spec and
evaluate the result on the full `dev` split with the sealed evaluator. The ExpOS side
adds the guards (role, overrides, lineage, budget), the second contamination check,
re-hashing of the dataset and parent, moving outputs into the store and the ledger
events. Runs alternate (bare, ExpOS, bare, ...) in one process so both see the same
warm imports and the same machine load. Target: ExpOS / bare <= 1.02.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="arithmetic")
    ap.add_argument("--family", default="scratchpad")
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()

    from rsi_master.expos import Budget, Caller, ExpOS
    from rsi_master.runtime import base_model_dir, evaluate, make_spec, train

    root = Path(tempfile.mkdtemp(prefix="bench-expos-"))
    os.environ["RSI_MASTER_KEY_DIR"] = str(root / "keys")
    expos = ExpOS.create(root / "run", args.task, budget=Budget(max_experiments=100, max_train_steps=10_000))
    worker = Caller("worker", "bench")
    dataset = expos.call(worker, "data.generate", {"family": args.family, "n": args.n, "seed": 0}).dataset
    data_path = expos.run.store.path(dataset)
    spec = make_spec(method="sft", task=args.task)
    import torch  # noqa: F401  (warm imports for both sides)
    import trl  # noqa: F401

    # Time the runtime calls made inside ExpOS too: the difference is what the guards,
    # checks, store moves and events cost, free of run-to-run noise in training itself.
    import rsi_master.runtime as runtime

    inner: list[float] = []

    def timed(fn):
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                inner.append(time.perf_counter() - t0)
        return wrapper

    runtime.train, runtime.evaluate = timed(runtime.train), timed(runtime.evaluate)
    bare, guarded, overhead = [], [], []
    for i in range(args.repeat):
        t = time.perf_counter()
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            res = train(data_path, Path(tmp) / "out", spec, parent=base_model_dir())
            evaluate(res.checkpoint_dir, args.task, "dev", seal_key=expos.seal_key(),
                     evaluator=expos.sealed_evaluator(),
                     expected_evaluator_digest=expos.contract.evaluator.evaluator_digest)
        bare.append(time.perf_counter() - t)
        inner.clear()
        t = time.perf_counter()
        result = expos.call(worker, "experiment.submit", {"dataset": dataset, "config": {}})
        guarded.append(time.perf_counter() - t)
        overhead.append(guarded[-1] - sum(inner))
        assert result.status == "completed", result
        print(f"round {i}: bare {bare[-1]:.1f} s, expos {guarded[-1]:.1f} s "
              f"(of which outside train/evaluate {overhead[-1]:.2f} s)", flush=True)
    expos.close()
    b, g = sum(bare) / len(bare), sum(guarded) / len(guarded)
    o = sum(overhead) / len(overhead)
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    print("---")
    print(f"experiment: {args.task}/{args.family}, {args.n} rows, default SFT spec, dev evaluation")
    print(f"bare_runtime_s: {b:.2f}")
    print(f"expos_s: {g:.2f}")
    print(f"ratio_expos_over_bare: {g / b:.4f}  (one-run ratio; includes training noise)")
    print(f"expos_own_time_s: {o:.2f}  (guards, contamination re-check, re-hashing, store moves, events)")
    print(f"overhead_fraction: {o / g:.4f}  (target <= 0.02: {'met' if o / g <= 0.02 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
