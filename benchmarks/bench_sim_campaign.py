"""CPU and wall seconds of one simulated campaign (the unit the simulated bench is made of).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_sim_campaign.py [CONFIG] [BUDGET_S]

Runs `bench._simbench.sim_campaign` for CONFIG (default `rsi-master`) on landscape 0, seed 0,
default preset, 4 slots, BUDGET_S simulated seconds (default 36000: 10 hours) in a temporary
directory, and prints wall and CPU seconds and the campaign's final, base and best reachable
scores (the same for a seed unless the code's behaviour changed). Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

from rsi_master.bench._shortcuts import ShortcutTendency
from rsi_master.bench._simbench import sim_campaign
from rsi_master.sim import PRESETS


def main() -> None:
    config = sys.argv[1] if len(sys.argv) > 1 else "rsi-master"
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 36000.0
    out = tempfile.mkdtemp(prefix="sim-campaign-")
    os.environ["RSI_MASTER_KEY_DIR"] = out + "/keys"
    t0, c0 = time.perf_counter(), time.process_time()
    raw = sim_campaign(
        config,
        0,
        False,
        0,
        budget_s=budget,
        out=out,
        flags_json=PRESETS["default"].model_dump_json(),
        slots=4,
        tendency_json=ShortcutTendency().model_dump_json(),
        key_dir=out + "/keys",
    )
    d = json.loads(raw)
    print(
        f"config: {config}\nwall_s: {time.perf_counter() - t0:.1f}\ncpu_s: {time.process_time() - c0:.1f}\n"
        f"final: {d['final']}\nbase: {d['base']}\nbest_reachable: {d['best_reachable']}"
    )


if __name__ == "__main__":
    main()
