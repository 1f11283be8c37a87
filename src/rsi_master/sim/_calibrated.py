"""The `calibrated` preset's flags, fitted to the measured curves of the built-in suite.

Written from the output of `benchmarks/sim_calibrate.py` (which reads `landscape.json` through
`rsi_master.landscape` and fits the curve model of `_curves.py`); tests/sim/test_calibrate.py
checks that a fresh fit still gives these figures. Ranges span the fitted values of the curves.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CALIBRATED"]

CALIBRATED: dict[str, Any] = {
    "n_families": 5,
    "base_accuracy": (0.0, 0.02),
    "plateau": (0.1, 0.95),
    "midpoint_steps": (600.0, 4000.0),
    "slope": (1.5, 6.0),
    "seed_spread": 0.2,
    "seconds_per_step": 0.3,
    "split_sizes": {"dev": 200, "review": 200, "final": 240},
}
