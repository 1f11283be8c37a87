"""The calibrated preset: its flags are what a fresh fit of the shipped curves gives, and the fit
figure is computed from real residuals and real seed spreads."""

from __future__ import annotations

import pytest

from rsi_master.landscape import sim_calibration
from rsi_master.sim import PRESETS, curve, fit_curves, generate_world
from rsi_master.sim._calibrated import CALIBRATED


def test_calibrated_preset_matches_a_fresh_fit_of_the_shipped_curves():
    fit = sim_calibration()
    assert len(fit.fits) >= 20 and fit.seed_points >= 30
    fitted = fit.flags()
    for key, value in fitted.items():
        assert CALIBRATED[key] == value, key
        assert getattr(PRESETS["calibrated"], key) == value, key
    # the figure published in docs/sim.md
    assert 0 < fit.rms_error < 0.1 and 0.02 < fit.seed_sd < 0.1
    assert fit.ratio == pytest.approx(fit.rms_error / fit.seed_sd)
    # the generator's noise reproduces the measured seed-to-seed spread at the measured points
    assert fit.simulated_seed_sd == pytest.approx(fit.seed_sd, abs=0.002)


def test_fit_recovers_a_known_curve_and_measures_seed_spread():
    steps = [300.0, 600.0, 1200.0, 2400.0, 4800.0, 9600.0]
    pts = [
        (s, curve(s, 0.0, 0.7, 1500.0, 3.0), [curve(s, 0.0, 0.7, 1500.0, 3.0) + d for d in (-0.02, 0.02)])
        for s in steps
    ]
    fit = fit_curves({"t/known": pts})
    (one,) = fit.fits
    assert one.plateau == pytest.approx(0.7, abs=0.02)
    assert one.midpoint == pytest.approx(1500.0, rel=0.05)
    assert one.slope == pytest.approx(3.0, abs=0.2)
    assert fit.rms_error < 0.01  # the grid's resolution
    assert fit.seed_sd == pytest.approx(0.02 * 2**0.5, rel=1e-6)


def test_short_curves_are_left_out():
    fit = fit_curves({"t/short": [(100.0, 0.1, []), (200.0, 0.2, []), (400.0, 0.3, [])]})
    assert fit.fits == ()


def test_calibrated_worlds_generate():
    for seed in range(5):
        land = generate_world(seed, PRESETS["calibrated"], preset="calibrated")
        assert len(land.family_specs) == 3
        assert land.base_score() < land.best_reachable()
