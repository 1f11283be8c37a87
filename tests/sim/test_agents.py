"""The `agents` preset's failure modes: off in `default` (byte for byte), item structure that
correlates outcomes and sets the interactions, gains on `dev` that `review` does not see."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from rsi_master.sim import PRESETS, SimRecipe, flags_from, generate_world, loads_world
from rsi_master.sim._items import interaction_from_overlap


def _recipe(land, family: str, **kw) -> SimRecipe:
    spec = next(f for f in land.family_specs if f.name == family)
    steps = int(3 * spec.midpoint)  # well into the curve: the family's own skills show
    args = {"family": family, "learning_rate": spec.lr_optimum, "batch_size": 32, "steps": steps, "rows": 10**7}
    return SimRecipe(**{**args, **kw})


def test_default_is_what_it_was_before_the_agents_flags():
    # Pinned on the code before these flags existed: the same file bytes, checkpoint and scores.
    land = generate_world(0, PRESETS["default"], preset="default")
    f = land.family_specs[0]
    ck, _ = land.train(
        land.base_checkpoint(), SimRecipe(family=f.name, learning_rate=1e-3, batch_size=32, steps=3000, rows=20000), 1
    )
    assert hashlib.sha256(land.model_dump_json().encode()).hexdigest()[:16] == "e2ec271d6db9a526"
    assert ck.ident == "5f95a8dde8b47176a5c2a655"
    assert land.accuracy(ck, "dev") == 0.112252282014573 and land.evaluate(ck, "review", 200) == 17
    for name in ("item_difficulty", "dev_gap", "overclaim_rate", "skills", "dev_format", "dev_prone", "dev_fit"):
        assert name not in land.model_dump_json() and name not in ck.model_dump_json()


def test_agents_preset_round_trips_and_refuses_bad_values():
    land = generate_world(5, PRESETS["agents"], preset="agents")
    assert land.skills and land.model_dump_json().count("dev_gap") == 1
    assert set(land.dev_prone) == set(land.families()) and all(0 <= v <= 2 for v in land.dev_prone.values())
    assert len(set(land.dev_prone.values())) > 1  # the gap depends on the direction
    assert loads_world(land.model_dump_json(), "x") == land
    with pytest.raises(Exception, match="item_difficulty"):
        flags_from("default", item_difficulty=0.6, item_skill=0.5)


def test_item_outcomes_keep_the_accuracy_and_correlate_across_checkpoints():
    land = generate_world(3, flags_from("agents", split_sizes={"dev": 200, "review": 2000, "final": 240}))
    base = land.base_checkpoint()
    fams = sorted(land.families())
    ckpts = [land.train(base, _recipe(land, f), seed=s)[0] for f in fams for s in range(4)]
    outs = np.array([land.outcomes(c, "review", 2000) for c in ckpts], dtype=float)
    acc = np.array([land.accuracy(c, "review") for c in ckpts])
    assert np.abs(outs.mean(axis=1) - acc).max() < 0.06  # expected share right is still the accuracy
    # hard items stay hard: an item's success in one half of the checkpoints predicts the other half
    a, b = outs[::2].mean(axis=0), outs[1::2].mean(axis=0)
    assert np.corrcoef(a, b)[0, 1] > 0.3
    # the independent default has no such structure
    flat = generate_world(3, flags_from("default", split_sizes={"dev": 200, "review": 2000, "final": 240}))
    fl = np.array([flat.outcomes(flat.train(flat.base_checkpoint(), _recipe(flat, f), seed=s)[0], "review", 2000)
                   for f in sorted(flat.families()) for s in range(4)], dtype=float)  # fmt: skip
    assert abs(np.corrcoef(fl[::2].mean(axis=0), fl[1::2].mean(axis=0))[0, 1]) < 0.15


def test_complementary_families_miss_different_items_and_their_mix_is_predicted():
    land = generate_world(11, flags_from("agents", split_sizes={"dev": 200, "review": 4000, "final": 240}))
    base = land.base_checkpoint()
    rho = {(a, b): float(np.dot(land.skills[a], land.skills[b])) for a in land.skills for b in land.skills if a < b}
    (lo_a, lo_b), (hi_a, hi_b) = min(rho, key=rho.get), max(rho, key=rho.get)

    def agreement(x: str, y: str) -> float:
        ox = np.array(land.outcomes(land.train(base, _recipe(land, x), 0)[0], "review", 4000))
        oy = np.array(land.outcomes(land.train(base, _recipe(land, y), 0)[0], "review", 4000))
        px, py = ox.mean(), oy.mean()
        # phi coefficient: agreement beyond what the two accuracies predict under independence
        return float(((ox & oy).mean() - px * py) / np.sqrt(px * (1 - px) * py * (1 - py)))

    assert agreement(lo_a, lo_b) < agreement(hi_a, hi_b)
    lo, hi = land.flags.interaction
    for pair, strength in land.interactions.items():
        assert strength == interaction_from_overlap(land.skills, pair, lo, hi)


def test_training_past_the_plateau_and_repeats_raise_dev_only():
    gap = generate_world(2, flags_from("default", dev_gap=0.3))
    none = generate_world(2, PRESETS["default"])
    f = max(gap.family_specs, key=lambda s: s.plateau)
    for land, expect_gap in ((gap, True), (none, False)):
        base = land.base_checkpoint()
        short = land.train(base, _recipe(land, f.name, steps=int(2 * f.midpoint)), 0)[0]
        long = land.train(base, _recipe(land, f.name, steps=int(60 * f.midpoint)), 0)[0]
        dev_gain = land.accuracy(long, "dev") - land.accuracy(short, "dev")
        review_gain = land.accuracy(long, "review") - land.accuracy(short, "review")
        if expect_gap:
            assert dev_gain > review_gain + 0.03
        else:
            assert dev_gain == pytest.approx(review_gain, abs=0.02)
    # many passes over a small dataset: dev-only memorising, inherited by the child
    base = gap.base_checkpoint()
    fresh = gap.train(base, _recipe(gap, f.name, steps=3000, rows=10**7), 0)[0]
    repeated = gap.train(base, _recipe(gap, f.name, steps=3000, rows=3000 * 32 // 30), 0)[0]
    assert repeated.dev_fit > 0 == fresh.dev_fit
    assert gap.accuracy(repeated, "dev") - gap.accuracy(repeated, "review") > (
        gap.accuracy(fresh, "dev") - gap.accuracy(fresh, "review")
    )
    child = gap.train(repeated, _recipe(gap, f.name, steps=10, rows=10**7), 0)[0]
    assert 0 < child.dev_fit <= repeated.dev_fit
