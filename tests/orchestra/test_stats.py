"""The Reviewer's tests (`orchestra._stats`): complementarity conditional on item difficulty."""

from __future__ import annotations

import numpy as np

from rsi_master.orchestra._stats import (
    ALPHA,
    Stratum,
    complementarity,
    difficulty_strata,
    stratified_complementarity,
)


def test_one_stratum_is_the_unconditional_test():
    for n, a, b, both in [(40, 20, 10, 0), (50, 30, 20, 12), (50, 5, 45, 5), (7, 3, 4, 1)]:
        assert stratified_complementarity([Stratum(n, a, b, both)]) == complementarity(n, a, b, both)


def test_complementarity_hidden_by_shared_hard_items_is_found_within_strata():
    # 50 items; the other checkpoints solve items 0..29 and none of 30..49 (hard). A solves 0..19,
    # B 10..29: on the items anyone solves they overlap on 10 where 13.3 are expected, but the 20
    # hard items both miss make the overlap look larger than independence predicts (8).
    a = {f"s{i}": i < 20 for i in range(50)}
    b = {f"s{i}": 10 <= i < 30 for i in range(50)}
    others = [{f"s{i}": i < 30 for i in range(50)}] * 4
    strata = difficulty_strata(a, b, others)
    assert sorted((s.n, s.a, s.b, s.both) for s in strata) == [(20, 0, 0, 0), (30, 20, 20, 10)]
    old = complementarity(50, 20, 20, 10)
    new = stratified_complementarity(strata)
    assert old.p > 0.5 and old.effect < 0
    assert new.p < 0.02 and abs(new.effect - (20 * 20 / 30 - 10)) < 1e-9 and new.n == 50


def test_without_other_checkpoints_the_test_is_unconditional():
    a = {f"s{i}": i < 20 for i in range(40)}
    b = {f"s{i}": 20 <= i < 30 for i in range(40)}
    (only,) = difficulty_strata(a, b, [])
    assert (only.n, only.a, only.b, only.both) == (40, 20, 10, 0)


def _draw(rng, difficulty, shift_a, shift_b, own):
    """Outcomes of two checkpoints on items of `difficulty` (a latent each adds), with `own` noise."""
    n = difficulty.size
    ea = difficulty + own * rng.standard_normal(n)
    eb = difficulty + own * rng.standard_normal(n)
    return ea < shift_a, eb < shift_b


def test_stratified_test_holds_its_size_where_the_old_null_has_no_power():
    # Items of spread difficulty (shared by every checkpoint), outcomes independent given it: the
    # stratified test rejects at about ALPHA or less. Complementary pairs (A strong on one half
    # of the items, B on the other, on top of difficulty): the stratified test finds most, the
    # unconditional one almost none (the shared hard items mask them).
    rng = np.random.default_rng(0)
    n, trials = 50, 300
    size = power_new = power_old = 0
    for _ in range(trials):
        d = 1.5 * rng.standard_normal(n)
        pool = [_draw(rng, d, 0.0, 0.0, 0.6)[0] for _ in range(8)]
        others = [{f"s{i}": bool(o[i]) for i in range(n)} for o in pool]
        ra, rb = _draw(rng, d, 0.0, 0.0, 0.6)
        a = {f"s{i}": bool(ra[i]) for i in range(n)}
        b = {f"s{i}": bool(rb[i]) for i in range(n)}
        size += stratified_complementarity(difficulty_strata(a, b, others)).p < ALPHA
        half = np.arange(n) < n // 2
        ra, rb = (
            _draw(rng, d + np.where(half, -1.0, 1.0), 0.0, 0.0, 0.6)[0],
            _draw(rng, d + np.where(half, 1.0, -1.0), 0.0, 0.0, 0.6)[0],
        )
        a = {f"s{i}": bool(ra[i]) for i in range(n)}
        b = {f"s{i}": bool(rb[i]) for i in range(n)}
        k = sum(a[i] and b[i] for i in a)
        power_new += stratified_complementarity(difficulty_strata(a, b, others)).p < ALPHA
        power_old += complementarity(n, sum(a.values()), sum(b.values()), k).p < ALPHA
    assert size / trials <= 0.08
    assert power_new / trials > 0.5 and power_old / trials < power_new / trials / 2
