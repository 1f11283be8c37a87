"""CPU and wall seconds of simulated campaigns (the unit the simulated bench is made of).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_sim_campaign.py [CONFIG|all] [BUDGET_S] [WORLDS]

Runs `bench._simbench.sim_campaign` for CONFIG (default `rsi-master`; `all`: every
configuration of the bench) on development worlds 0..WORLDS-1 (default 1), seed 0,
default preset, 4 slots, BUDGET_S simulated seconds (default 36000: 10 hours), each in a
temporary directory, and prints wall and CPU seconds and each campaign's final, base and best
reachable scores (the same for a seed unless the code's behaviour changed). A one-hour campaign of
four configurations on world 99 runs first, untimed: the imports a bench's worker process
pays once (Optuna, SciPy, the contamination index's libraries) are not charged to the first
campaign timed. With `all` it ends with the CPU seconds per world over every configuration and
what that projects for the bench (200 worlds x every configuration on 2 cores; target 15 minutes).
Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

from rsi_master.bench._configs import CONFIGS
from rsi_master.bench._shortcuts import ShortcutTendency
from rsi_master.bench._simbench import sim_campaign
from rsi_master.sim import PRESETS


def one(config: str, world: int, budget: float, *, say: bool = True) -> float:
    out = tempfile.mkdtemp(prefix="sim-campaign-")
    os.environ["RSI_MASTER_KEY_DIR"] = out + "/keys"
    t0, c0 = time.perf_counter(), time.process_time()
    raw = sim_campaign(
        config,
        world,
        False,
        0,
        budget_s=budget,
        out=out,
        flags_json=PRESETS["default"].model_dump_json(),
        slots=4,
        tendency_json=ShortcutTendency().model_dump_json(),
        key_dir=out + "/keys",
    )
    cpu = time.process_time() - c0
    d = json.loads(raw)
    if not say:
        return cpu
    print(
        f"config: {config}  world: {world}  wall_s: {time.perf_counter() - t0:.1f}  cpu_s: {cpu:.1f}  "
        f"final: {d['final']}  base: {d['base']}  best_reachable: {d['best_reachable']}",
        flush=True,
    )
    return cpu


def main() -> None:
    config = sys.argv[1] if len(sys.argv) > 1 else "rsi-master"
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 36000.0
    worlds = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    configs = list(CONFIGS) if config == "all" else [config]
    if not set(configs) <= set(CONFIGS):
        sys.exit(f"unknown configuration {config!r}; known: all, {', '.join(CONFIGS)}")
    for c in ("asha", "optuna-tpe", "rsi-master-prior", "no-expos"):
        one(c, 99, 3600.0, say=False)  # warm-up, untimed
    cpu: dict[str, float] = dict.fromkeys(configs, 0.0)
    for world in range(worlds):
        for c in configs:
            cpu[c] += one(c, world, budget)
    print("---")
    for c in configs:
        print(f"cpu_s_per_campaign_{c}: {cpu[c] / worlds:.1f}")
    per_world = sum(cpu.values()) / worlds
    print(f"cpu_s_per_world: {per_world:.1f}")
    if config == "all":
        projected = 200 * per_world / 2 / 60
        print(f"projected_200_worlds_2_cores_min: {projected:.0f}  (target 15; x{projected / 15:.1f})")


if __name__ == "__main__":
    main()
