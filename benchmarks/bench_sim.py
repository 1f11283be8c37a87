"""Simulator speed and budget realism.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_sim.py [--worlds 50]

Times the calls a simulated campaign makes (generate a world, `train`, `accuracy`,
`evaluate` on a fresh checkpoint and again on the same one), and runs a naive campaign per
world (4 slots, 10 simulated hours: each slot probes a family at default settings, then
keeps continuing the best `dev` checkpoint) to show how many experiments a budget buys and what
normalised score a naive strategy reaches. Figures go to docs/sim.md.
"""

from __future__ import annotations

import argparse
import statistics
import time

from rsi_master.sim import PRESETS, SimRecipe, generate_world


def per_call_us(fn, n: int) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        fn(i)
    return (time.perf_counter() - t0) / n * 1e6


def naive_campaign(land, slots: int = 4, hours: float = 10.0, steps: int = 1000) -> tuple[int, float]:
    """(experiments run, normalised final score) of a probe-then-exploit strategy."""
    fams = land.family_specs
    clock = [0.0] * slots
    best = (land.base_checkpoint(), -1)
    n = 0
    budget = hours * 3600
    dev = land.split_sizes["dev"]
    while True:
        slot = min(range(slots), key=lambda s: clock[s])
        if clock[slot] >= budget:
            break
        fam = fams[n % len(fams)] if n < 2 * len(fams) else None
        parent = land.base_checkpoint() if fam else best[0]
        name = fam.name if fam else best[0].progress and next(iter(best[0].progress)).split("|")[0]
        r = SimRecipe(family=name or fams[0].name, learning_rate=1e-3, batch_size=32, steps=steps, rows=64_000)
        ckpt, secs = land.train(parent, r, seed=n)
        score = land.evaluate(ckpt, "dev", dev)
        clock[slot] += secs + land.eval_seconds("dev", dev)
        if clock[slot] <= budget and score > best[1]:
            best = (ckpt, score)
        n += 1
    base, top = land.base_score(), land.best_reachable()
    return n, (land.accuracy(best[0], "final") - base) / (top - base)


def measure(preset: str, worlds: int) -> list[str]:
    flags = PRESETS[preset]
    t0 = time.perf_counter()
    lands = [generate_world(s, flags, preset=preset) for s in range(worlds)]
    gen_ms = (time.perf_counter() - t0) / len(lands) * 1e3
    land = lands[0]
    dev = land.split_sizes["dev"]
    r = SimRecipe(family=land.family_specs[0].name, learning_rate=1e-3, batch_size=32, steps=1000, rows=64_000)
    parent, _ = land.train(land.base_checkpoint(), r, 0)
    kids = [land.train(parent, r, i)[0] for i in range(20_000)]
    train_us = per_call_us(lambda i: land.train(parent, r, i), 20_000)
    fresh = generate_world(10_000, flags)  # its caches are empty
    rf = r.model_copy(update={"family": fresh.family_specs[0].name})
    kids_f = [fresh.train(fresh.base_checkpoint(), rf, i)[0] for i in range(20_000)]
    acc_us = per_call_us(lambda i: fresh.accuracy(kids_f[i], "final"), 20_000)
    eval_first_us = per_call_us(lambda i: land.evaluate(kids[i], "dev", dev), 20_000)
    eval_again_us = per_call_us(lambda i: land.evaluate(kids[i], "dev", dev), 20_000)
    t0 = time.perf_counter()
    runs = [naive_campaign(lnd) for lnd in lands]
    camp_ms = (time.perf_counter() - t0) / len(lands) * 1e3
    scores = sorted(s for _, s in runs)
    return [
        f"## {preset}",
        f"generate_ms: {gen_ms:.2f}",
        f"train_us: {train_us:.1f}",
        f"accuracy_first_us: {acc_us:.1f}",
        f"evaluate_first_us: {eval_first_us:.1f} ({dev} items)",
        f"evaluate_again_us: {eval_again_us:.1f}",
        f"naive_campaign_ms: {camp_ms:.1f} (4 slots, 10 h, 1000-step experiments)",
        f"experiments_per_campaign: {statistics.median(n for n, _ in runs):.0f} (median)",
        f"naive_normalised: median {statistics.median(scores):.3f}, range {scores[0]:.3f}..{scores[-1]:.3f}",
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worlds", type=int, default=50)
    args = ap.parse_args()
    for preset in ("default", "hard", "calibrated"):
        print("\n".join(measure(preset, args.worlds)))


if __name__ == "__main__":
    main()
