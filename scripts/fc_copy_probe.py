"""Does function calling turn sooner when copying is the only way to lower the loss?

A one-off experiment, kept so its figures in docs/tasks.md ("What function calling waits
for is copying") can be re-run.
At 1.7 default experiments a plan-then-call lineage had learned the format and the right
function on nearly every `dev` item and copied almost no argument value from the request
(it wrote plausible catalogue values instead: "Riga" for "Seoul", 20 for 17). The catalogue's
values are few, so a prior over them lowers the loss without copying. Here every string
argument of the training requests is a made-up word instead (`novel`), which a prior cannot
predict, against the same recipe on the catalogue's values (`control`): the landscape's curve
spec (batch 8, lr 1e-3 constant after warm-up), snapshots at 0.5, 1, 1.5 and 2 default
experiments, each scored on the whole `dev` split.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/fc_copy_probe.py novel 1
    OMP_NUM_THREADS=1 .venv/bin/python scripts/fc_copy_probe.py control 1
    OMP_NUM_THREADS=1 .venv/bin/python scripts/fc_copy_probe.py control 1 --batch 4   # curve spec at batch 4

Writes under runs/novel/ (not tracked) and prints one line per snapshot.
"""

from __future__ import annotations

import string
import sys
from functools import partial
from pathlib import Path

import torch

from rsi_master.landscape import CURVE_BATCH, CURVE_SPEC, DEFAULT_EXAMPLES
from rsi_master.runtime import evaluate as _evaluate
from rsi_master.runtime import generate, train
from rsi_master.tasks import PUBLIC_SEAL_KEY
from rsi_master.tasks import _fc_catalog as cat

# Probes and the landscape score the public splits (reproducible from the code; docs quote them).
evaluate = partial(_evaluate, seal_key=PUBLIC_SEAL_KEY)

MULTIPLES = (0.5, 1.0, 1.5, 2.0)


def novel_values() -> None:
    """Every string argument a made-up word of 3-7 letters, capitalised like the value it replaces."""
    orig = cat.Param.draw

    def draw(self: cat.Param, rng):  # type: ignore[no-untyped-def]
        v = orig(self, rng)
        if self.type == "str":
            w = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 7)))
            return w.capitalize() if v[:1].isupper() else w
        return v

    cat.Param.draw = draw  # type: ignore[method-assign]


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("novel", "control"))
    ap.add_argument("seed", type=int)
    ap.add_argument("--task", default="function_calling", help="control mode only: any task of the suite")
    ap.add_argument("--family", default="plan_then_call")
    ap.add_argument("--batch", type=int, default=CURVE_BATCH, help="batch size (default: the curves')")
    ap.add_argument(
        "--lr",
        type=float,
        default=CURVE_SPEC["learning_rate"],
        help="constant learning rate after warm-up (default: the curves')",
    )
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.mode == "novel":
        if args.task != "function_calling":
            ap.error("novel values are function-calling arguments")
        novel_values()
    tag = "" if (args.batch, args.lr) == (CURVE_BATCH, CURVE_SPEC["learning_rate"]) else f".b{args.batch}.lr{args.lr:g}"
    task_tag = "" if args.task == "function_calling" else f"{args.task}."
    root = Path(f"runs/novel/{task_tag}{args.family}.{args.mode}.s{args.seed}{tag}")
    root.mkdir(parents=True, exist_ok=True)
    n = int(DEFAULT_EXAMPLES * MULTIPLES[-1])
    data = root / "data.jsonl"
    if not data.exists():
        generate(args.task, args.family, {}, args.seed, n, data)
    steps = {m: round(m * DEFAULT_EXAMPLES / args.batch) for m in MULTIPLES}
    total = n // args.batch
    spec = {**CURVE_SPEC, "learning_rate": args.lr, "batch_size": args.batch, "seed": args.seed}
    res = train(data, root / "run", spec, snapshot_steps=[s for s in steps.values() if s < total])
    print(f"train s {res.train_seconds:.0f}", flush=True)
    for m, s in steps.items():
        ckpt = root / "run" / "checkpoint" if s >= total else root / "run" / "snapshots" / f"step-{s:06d}"
        score = evaluate(ckpt, args.task, "dev").score
        print(f"{task_tag}{args.family} {args.mode} s{args.seed}{tag} x{m}: {score:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
