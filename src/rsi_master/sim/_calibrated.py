"""The `calibrated` preset's flags, fitted to the measured curves of the built-in suite.

Written from the output of `benchmarks/sim_calibrate.py` (which reads `landscape.json` through
`rsi_master.landscape` and fits the curve model of `_curves.py`); tests/sim/test_calibrate.py
checks that a fresh fit still gives these figures. The flags not named keep their defaults.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CALIBRATED"]

CALIBRATED: dict[str, Any] = {
    # fitted (benchmarks/sim_calibrate.py, CalibrationFit.flags())
    "n_families": 3,
    "base_accuracy": (0.0, 0.02),
    "plateau": (0.276, 0.986),
    "midpoint_steps": (1052.0, 16311.0),
    "slope": (0.73, 8.37),
    "seed_spread": 0.223,
    "seconds_per_step": 0.194,
    # the suite's split sizes (tasks.EVAL_SIZE items per split)
    "split_sizes": {"dev": 200, "review": 200, "final": 200},
}
