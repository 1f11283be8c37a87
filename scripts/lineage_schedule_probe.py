"""Does a lineage of chained trials learn like one continuous run? It depends on the schedule.

A one-off experiment, kept so its figures in docs/tasks.md ("Lineages") can be re-run. A
Worker's lineage is a chain of experiments, each from the last one's checkpoint on fresh
data. This trains three such chunks of 3,334 examples (2 default experiments in all) of
function calling's plan-then-call on one shown function (the recipe that turns first), batch 8,
peak rate 1e-3, 3% warm-up, with one learning-rate schedule per chunk, and scores each chunk's
checkpoint on the whole `dev` split:

    OMP_NUM_THREADS=1 .venv/bin/python scripts/lineage_schedule_probe.py cosine
    OMP_NUM_THREADS=1 .venv/bin/python scripts/lineage_schedule_probe.py constant_with_warmup
    OMP_NUM_THREADS=1 .venv/bin/python scripts/lineage_schedule_probe.py warmup_stable_decay [--data-seed 60]

Writes under runs/chunk/ (not tracked) and prints one JSON line per chunk.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from pathlib import Path

import torch

from rsi_master.runtime import evaluate as _evaluate
from rsi_master.runtime import generate, train
from rsi_master.tasks import PUBLIC_SEAL_KEY

# Probes and the landscape score the public splits (reproducible from the code; docs quote them).
evaluate = partial(_evaluate, seal_key=PUBLIC_SEAL_KEY)

CHUNK = 3334


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scheduler", choices=("cosine", "constant_with_warmup", "warmup_stable_decay"))
    ap.add_argument("--data-seed", type=int, default=50, help="seed of the first chunk's data (+1 per chunk)")
    ap.add_argument("--chunks", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    root = Path("runs/chunk") / f"{args.scheduler}{args.data_seed}"
    root.mkdir(parents=True, exist_ok=True)
    parent = None
    for i in range(args.chunks):
        data = root / f"d{i}.jsonl"
        if not data.exists():
            generate("function_calling", "plan_then_call", {"n_shown": 1}, args.data_seed + i, CHUNK, data)
        spec = {
            "method": "sft",
            "learning_rate": 1e-3,
            "batch_size": 8,
            "epochs": 1.0,
            "lr_scheduler": args.scheduler,
            "warmup_ratio": 0.03,
            "seed": i,
        }
        t = time.time()
        parent = train(data, root / f"c{i}", spec, parent=parent).checkpoint_dir
        score = evaluate(parent, "function_calling", "dev").score
        print(
            json.dumps(
                {
                    "scheduler": args.scheduler,
                    "data_seed": args.data_seed,
                    "chunk": i,
                    "examples": CHUNK * (i + 1),
                    "dev": score,
                    "seconds": round(time.time() - t),
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
