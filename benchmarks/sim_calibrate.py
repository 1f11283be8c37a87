"""Calibration of the simulator against the built-in suite's measured curves.

    PYTHONPATH=src .venv/bin/python benchmarks/sim_calibrate.py

Fits the generator's curve model to every measured curve of `landscape.json` (read through
`rsi_master.landscape`), prints each fit, the fit error against the seed-to-seed spread, and
the `calibrated` preset's flags the fit gives (src/rsi_master/sim/_calibrated.py holds them;
tests/sim/test_calibrate.py checks they still match). Figures go to docs/sim.md.
"""

from __future__ import annotations

from rsi_master.landscape import sim_calibration


def main() -> None:
    fit = sim_calibration()
    print("\n".join(fit.lines()))
    for k, v in fit.flags().items():
        print(f"flag.{k}: {v}")


if __name__ == "__main__":
    main()
