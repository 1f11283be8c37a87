"""Learning-curve extrapolation (`_curves.forecast`) on synthetic curves with known truth."""

from __future__ import annotations

import math

from rsi_master.orchestra import forecast


def _fast(t: float) -> float:  # an early leader: learns at once, plateaus at 0.30
    return 0.3 * (1 - math.exp(-t / 500))


def _slow(t: float) -> float:  # a late bloomer: slow, but heads for 0.80
    return 0.8 * (1 - math.exp(-t / 8000))


SEEN = (250.0, 500.0, 1000.0, 2000.0)


def _of(curve, at, seen=SEEN, n_items=200):
    return forecast([(t, curve(t)) for t in seen], at, n_items=n_items)


def test_the_ranking_follows_the_true_curves_near_and_far():
    # Near the evidence the early leader is ahead, far beyond it the late bloomer: the forecast
    # ranks both ways as the true curves do.
    assert _of(_fast, 2500).mean > _of(_slow, 2500).mean
    assert _of(_slow, 20000).mean > _of(_fast, 20000).mean + 0.1
    # and is close to the truth where the evidence pins the curve down
    assert abs(_of(_fast, 2500).mean - _fast(2500)) < 0.02
    assert abs(_of(_slow, 2500).mean - _slow(2500)) < 0.04


def test_a_flattened_curve_is_forecast_flat_and_sure_a_climbing_one_higher_and_unsure():
    fast, slow = _of(_fast, 20000), _of(_slow, 20000)
    assert abs(fast.mean - 0.3) < 0.02 and fast.std < 0.05
    assert slow.std > 3 * fast.std
    # the truth lies within a few standard deviations of each forecast
    assert abs(slow.mean - _slow(20000)) < 3 * slow.std


def test_uncertainty_grows_with_the_distance_extrapolated_and_shrinks_with_evidence():
    near, far = _of(_slow, 2500), _of(_slow, 20000)
    assert far.std > near.std
    few = _of(_slow, 20000, seen=(250.0, 500.0))
    assert few.std > far.std
    # more items per score is less noise: a tighter forecast at the same points
    assert _of(_slow, 20000, n_items=2000).std < _of(_slow, 20000, n_items=50).std


def test_zeros_forecast_near_zero_and_no_evidence_is_the_widest_guess():
    # Two zeros: most curves they allow stay at zero, some turn later (an onset past them).
    zeros = forecast([(500.0, 0.0), (1000.0, 0.0)], 5000.0, n_items=50)
    assert zeros.mean < 0.1 and zeros.n == 2
    # The longer a curve has stayed flat, the less it is expected to turn in the next stretch.
    longer = forecast([(500.0, 0.0), (1000.0, 0.0), (2000.0, 0.0), (4000.0, 0.0)], 5000.0, n_items=50)
    assert longer.mean < zeros.mean / 3 and longer.std < zeros.std
    blind = forecast([], 5000.0, floor=0.2)
    assert blind.n == 0 and abs(blind.mean - 0.6) < 1e-12 and abs(blind.std - 0.8 / math.sqrt(12)) < 1e-12
    assert blind.std > zeros.std


def test_the_forecast_stays_a_score_and_respects_the_floor():
    f = forecast([(100.0, 1.0), (200.0, 1.0)], 1e9, floor=0.4)
    assert 0.0 <= f.mean <= 1.0
    g = forecast([(t, 0.4) for t in range(100, 2100, 100)], 3000.0, floor=0.4)
    assert abs(g.mean - 0.4) < 0.02  # long flat at the floor: little forecast
    assert f.ucb(1.0) == f.mean + f.std


def test_the_expected_gain_prefers_a_curve_that_may_still_turn_to_a_flat_leader():
    leader = forecast([(t, 0.3) for t in range(300, 9300, 300)], 10800.0, n_items=50)  # flat at 0.3
    early_zeros = forecast([(300.0, 0.0), (600.0, 0.0)], 2400.0, n_items=50)
    long_zeros = forecast([(t, 0.0) for t in (300.0, 600.0, 1200.0, 2400.0, 4800.0)], 6600.0, n_items=50)
    assert leader.mean > early_zeros.mean  # the leader is ahead on expectation...
    # ...but has little left to give over the best score, where a barely tried curve may turn
    assert early_zeros.gain(0.3) > 2 * leader.gain(0.3)
    assert long_zeros.gain(0.3) < leader.gain(0.3)  # not one that has stayed flat for long
    climbing = forecast([(400.0, 0.05), (800.0, 0.15), (1200.0, 0.3)], 1800.0, n_items=50)
    assert climbing.gain(0.3) > leader.gain(0.3)
    assert leader.gain(0.3, widen=0.1) > leader.gain(0.3)  # more uncertainty, more upside
