"""The bench statistics on hand-made records whose answers are known."""

from __future__ import annotations

import math

import pytest

from rsi_master.bench import (
    DEVELOPMENT_SEEDS,
    HELD_OUT_SEEDS,
    CampaignStats,
    Spend,
    bootstrap_ci,
    is_held_out,
    late_gain,
    lock_in,
    normalised,
    paired_test,
    plot_summaries,
    plot_timelines,
    summarise,
    summary_lines,
    timeline_curve,
    world_seeds,
)


def rec(config="a", land=0, seed=0, final=0.35, base=0.1, best=0.6, held=False, **kw) -> CampaignStats:
    return CampaignStats(
        config=config, world_seed=land, seed=seed, held_out=held, base=base, final=final, best_reachable=best, **kw
    )


def test_normalised_score():
    assert normalised(rec(final=0.35)) == pytest.approx(0.5)
    assert normalised(rec(final=0.1)) == 0.0
    assert normalised(rec(final=0.6)) == pytest.approx(1.0)
    assert normalised(rec(final=0.0)) < 0
    with pytest.raises(ValueError, match="best_reachable not above base"):
        normalised(rec(best=0.1))


def test_a_record_written_before_the_world_rename_reads():
    """A `stats.json` of a campaign already run names its world's seed `landscape_seed`: a bench
    resumed on its directory reads it; records are written with `world_seed`."""
    new = rec(land=7)
    raw = new.model_dump_json()
    assert '"world_seed":7' in raw and "landscape" not in raw
    old = raw.replace('"world_seed"', '"landscape_seed"')
    assert CampaignStats.model_validate_json(old) == new


def test_bootstrap_interval():
    assert bootstrap_ci([0.4] * 20) == pytest.approx((0.4, 0.4))
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    assert all(math.isnan(x) for x in bootstrap_ci([]))
    lo, hi = bootstrap_ci([0.0, 1.0] * 50)
    # the mean of 100 fair coins: sd 0.05, a 95% interval about 0.4..0.6
    assert 0.38 < lo < 0.42 and 0.58 < hi < 0.62
    assert bootstrap_ci([0.0, 1.0] * 50) == (lo, hi)  # seeded


def test_paired_test_on_known_differences():
    records = [rec("ref", land=i, final=0.2 + 0.01 * i) for i in range(10)]
    records += [rec("better", land=i, final=0.25 + 0.01 * i + 0.001 * i) for i in range(10)]
    t = paired_test(records, "better", "ref")
    assert t.pairs == 10
    # ten positive differences: exact two-sided p = 2 / 2**10 in both tests
    assert t.p_permutation == pytest.approx(2 / 1024)
    assert t.p_wilcoxon == pytest.approx(2 / 1024)
    assert t.mean_diff == pytest.approx((0.05 + 0.0045) / 0.5)
    assert t.ci[0] > 0
    same = paired_test(records + [rec("same", land=i, final=0.2 + 0.01 * i) for i in range(10)], "same", "ref")
    assert same.p_permutation == 1.0 and same.p_wilcoxon is None and same.mean_diff == 0


def test_paired_test_pairs_by_world_and_seed():
    records = [rec("ref", land=1, seed=0, final=0.2), rec("ref", land=2, seed=0, final=0.3)]
    records += [rec("x", land=1, seed=0, final=0.4), rec("x", land=3, seed=0, final=0.9)]
    t = paired_test(records, "x", "ref")
    assert t.pairs == 1 and t.mean_diff == pytest.approx(0.4)
    assert t.relative == pytest.approx(0.6 / 0.2 - 1)
    assert t.lead == pytest.approx(0.2 / 0.6 - 1)  # the other convention: reference / config - 1


def test_permutation_test_with_many_pairs_is_monte_carlo_and_sensible():
    records = [rec("ref", land=i, final=0.3) for i in range(40)]
    noise = [(-1) ** i * 0.05 for i in range(40)]
    records += [rec("null", land=i, final=0.3 + noise[i]) for i in range(40)]
    t = paired_test(records, "null", "ref")
    assert t.p_permutation > 0.5
    records += [rec("up", land=i, final=0.35 + noise[i] / 5) for i in range(40)]
    assert paired_test(records, "up", "ref").p_permutation < 0.001


def test_lock_in_counts_spend_on_an_overtaken_former_leader():
    spend = [
        Spend(direction="A", start=0, end=10, score=0.3),
        Spend(direction="A", start=10, end=20, score=0.4),
        Spend(direction="B", start=20, end=30, score=0.6),  # B overtakes A at t=30
        Spend(direction="A", start=30, end=40, score=0.45),  # A trails after leading: locked in
        Spend(direction="C", start=30, end=40, score=0.1),  # C never led: exploration
        Spend(direction="B", start=40, end=50, score=0.7),
    ]
    assert lock_in(rec(spend=spend)) == pytest.approx(10 / 60)
    assert lock_in(rec()) == 0.0
    # running while B is still training does not count: B had not finished when A started
    parallel = [
        Spend(direction="A", start=0, end=10, score=0.3),
        Spend(direction="B", start=5, end=30, score=0.6),
        Spend(direction="A", start=10, end=30, score=0.4),
    ]
    assert lock_in(rec(spend=parallel)) == 0.0


def test_late_budget_gain():
    timeline = [(10.0, 0.2), (40.0, 0.3), (60.0, 0.5)]
    r = rec(final=0.5, budget_s=100.0, timeline=timeline)
    assert late_gain(r) == pytest.approx(0.8 - 0.4)
    assert late_gain(rec(final=0.5, budget_s=100.0, timeline=[(70.0, 0.5)])) == pytest.approx(0.8)
    assert late_gain(rec()) == 0.0


def test_seed_ranges_are_disjoint_and_held_out_is_recognised():
    assert set(DEVELOPMENT_SEEDS).isdisjoint(HELD_OUT_SEEDS)
    dev, held = world_seeds(5), world_seeds(5, held_out=True)
    assert dev == [0, 1, 2, 3, 4] and all(is_held_out(s) for s in held) and not any(map(is_held_out, dev))
    with pytest.raises(ValueError):
        world_seeds(-1)


def test_summary_per_config_and_range_with_rates(tmp_path):
    records = []
    for held in (False, True):
        for i in range(6):
            land = (HELD_OUT_SEEDS if held else DEVELOPMENT_SEEDS)[i]
            records.append(rec("rsi", land=land, final=0.5, held=held, attempts=2, intercepted=2))
            records.append(
                rec("peer", land=land, final=0.3, held=held, hacked=i == 0, attempts=1 if i < 2 else 0, intercepted=0)
            )
    out = summarise(records, reference="rsi")
    assert [(s.config, s.held_out) for s in out] == [("peer", False), ("rsi", False), ("peer", True), ("rsi", True)]
    peer, rsi = out[0], out[1]
    assert rsi.mean == pytest.approx(0.8) and peer.mean == pytest.approx(0.4)
    assert rsi.test is None and peer.test is not None and peer.test.pairs == 6
    assert peer.test.p_permutation == pytest.approx(2 / 64)
    assert peer.hacking_rate == pytest.approx(1 / 6) and rsi.hacking_rate == 0
    assert rsi.interception_rate == 1.0 and peer.interception_rate == 0.0
    lines = summary_lines(out)
    assert len(lines) == 2 + 4 and "held-out" in lines[-1] and "reference" in lines[-1]
    path = plot_summaries(out, tmp_path / "bench.png")
    assert path.stat().st_size > 1000


def test_records_round_trip():
    r = rec(timeline=[(1.0, 0.2)], spend=[Spend(direction="A", start=0, end=1, score=0.2)])
    assert CampaignStats.model_validate_json(r.model_dump_json()) == r


def test_timeline_curve_and_plot(tmp_path):
    a = rec(final=0.6, budget_s=100.0, timeline=[(20.0, 0.35), (80.0, 0.6)])
    b = rec(final=0.35, budget_s=100.0, timeline=[(50.0, 0.35)])
    xs, ys = timeline_curve([a, b], points=5)
    assert xs == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert ys == pytest.approx([0.0, 0.25, 0.5, 0.5, 0.75])
    path = plot_timelines([a, b, rec(config="b", held=True, timeline=[(1.0, 0.2)])], tmp_path / "t.png", held_out=False)
    assert path.stat().st_size > 1000
