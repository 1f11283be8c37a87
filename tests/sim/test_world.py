"""The simulator's interface and every structural feature, visible in generated worlds."""

from __future__ import annotations

import math

import pytest

from rsi_master.sim import (
    PRESETS,
    SimCheckpoint,
    SimInputError,
    SimRecipe,
    SimWorld,
    curve,
    generate_world,
    loads_world,
)


def recipe(land: SimWorld, family: str | None = None, **kw) -> SimRecipe:
    spec = land.family_specs[0] if family is None else next(f for f in land.family_specs if f.name == family)
    base = {
        "family": spec.name,
        "knobs": {k.name: k.optimum for k in spec.knobs},
        "learning_rate": spec.lr_optimum,
        "batch_size": 32,
        "steps": 1000,
        "rows": 10**7,
    }
    base.update(kw)
    return SimRecipe.model_validate(base)


def ranked(land: SimWorld) -> list:
    """Families by plateau, best first."""
    return sorted(land.family_specs, key=lambda f: -f.plateau)


def test_same_seed_same_world_and_outcomes():
    a, b = generate_world(7), generate_world(7)
    assert a == b and a.model_dump_json() == b.model_dump_json()
    assert generate_world(8) != a
    r = recipe(a)
    ca, sa = a.train(a.base_checkpoint(), r, seed=3)
    cb, sb = b.train(b.base_checkpoint(), r, seed=3)
    assert ca == cb and sa == sb
    assert a.evaluate(ca, "dev", 200) == b.evaluate(cb, "dev", 200)
    # another training seed is another outcome
    cc, _ = a.train(a.base_checkpoint(), r, seed=4)
    assert cc.ident != ca.ident and cc.progress != ca.progress


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_round_trips_through_json(preset):
    land = generate_world(11, PRESETS[preset], preset=preset)
    again = loads_world(land.model_dump_json())
    assert again == land
    assert again.best_reachable() == land.best_reachable()
    assert again.ident == land.ident
    fams = land.families()
    assert len(fams) == PRESETS[preset].n_families
    for fam in fams.values():
        assert "sft" in fam.methods and set(fam.methods) <= {"sft", "lora", "dpo", "grpo"}
        for k in fam.knobs:
            assert k.kind in ("int", "float", "choice")


def test_checkpoint_is_serialisable_and_scores_the_same_after():
    land = generate_world(3)
    ckpt, _ = land.train(land.base_checkpoint(), recipe(land), seed=0)
    back = SimCheckpoint.model_validate_json(ckpt.model_dump_json())
    assert land.accuracy(back, "final") == land.accuracy(ckpt, "final")
    assert land.evaluate(back, "final", 240) == land.evaluate(ckpt, "final", 240)
    assert back.parent == land.base_checkpoint().ident and back.steps_total == 1000


def test_base_and_best_reachable_bracket_what_training_reaches():
    for seed in range(20):
        land = generate_world(seed)
        base, best = land.base_score("final"), land.best_reachable()
        assert 0 <= base < best <= 1
        ckpt = land.base_checkpoint()
        for _ in range(10):  # one lineage, a tenth of the budget each
            ckpt, _ = land.train(ckpt, recipe(land, ranked(land)[0].name, steps=12000), seed=0)
        assert base < land.accuracy(ckpt, "final") < best + 0.1


def test_late_bloomers_overtake_early_leaders():
    for seed in range(30):
        land = generate_world(seed)
        fams = ranked(land)
        best, leader = fams[0], min(fams, key=lambda f: f.midpoint)
        early = round(2 * leader.midpoint)
        pair = (best, leader)
        short = [
            land.accuracy(land.train(land.base_checkpoint(), recipe(land, f.name, steps=early), 0)[0]) for f in pair
        ]
        long_ = [
            land.accuracy(land.train(land.base_checkpoint(), recipe(land, f.name, steps=80000), 0)[0]) for f in pair
        ]
        assert short[1] > short[0], (seed, best.name, leader.name, short)
        assert long_[0] > long_[1], (seed, long_)


def test_learning_rate_has_an_optimum_and_batch_an_optimum_per_second():
    land = generate_world(5)
    fam = ranked(land)[0]
    scores = {}
    for lr_mult in (0.01, 0.1, 1.0, 10.0, 100.0):
        c, _ = land.train(land.base_checkpoint(), recipe(land, fam.name, learning_rate=fam.lr_optimum * lr_mult), 0)
        scores[lr_mult] = c.progress[next(iter(c.progress))]
    assert max(scores, key=scores.get) == 1.0
    assert scores[0.01] < scores[0.1] < scores[1.0] > scores[10.0] > scores[100.0]
    # effective progress per simulated second peaks at an intermediate batch size
    per_s = {}
    for b in (4, 32, 256):
        lr = fam.lr_optimum * math.sqrt(b / 32)
        c, secs = land.train(land.base_checkpoint(), recipe(land, fam.name, batch_size=b, learning_rate=lr), 0)
        per_s[b] = next(iter(c.progress.values())) / (secs - land.flags.train_overhead_s)
    assert per_s[32] > per_s[4] and per_s[32] > per_s[256]


def test_continuation_keeps_progress_and_switching_forgets_some():
    land = generate_world(2)
    fams = ranked(land)
    a, b = fams[0].name, fams[1].name
    ra = recipe(land, a, steps=2000)
    one, _ = land.train(land.base_checkpoint(), ra, 0)
    two, _ = land.train(one, ra, 0)
    key = next(iter(one.progress))
    assert two.progress[key] > one.progress[key]
    assert land.accuracy(two) > land.accuracy(one)
    assert two.steps_total == 4000
    switched, _ = land.train(two, recipe(land, b, steps=2000), 0)
    assert 0 < switched.progress[key] < two.progress[key]
    # a different knob value of the same family starts from a share of the family's progress
    spec = fams[0]
    numeric = [k for k in spec.knobs if k.kind != "choice"]
    if numeric:
        k = numeric[0]
        other = k.low if k.optimum != k.low else k.high
        moved, _ = land.train(two, recipe(land, a, steps=1, knobs={**ra.knobs, k.name: other}), 0)
        new_key = next(x for x in moved.progress if x != key)
        assert moved.progress[new_key] >= land.flags.transfer * two.progress[key]


def test_mixing_two_families_adds_their_interaction():
    found = 0
    for seed in range(20):
        quiet = {"interaction_prob": 1.0, "seed_spread": 0.0, "checkpoint_jitter": 0.0, "split_shift": 0.0}
        land = generate_world(seed, PRESETS["default"].model_copy(update=quiet))
        for pair, strength in land.interactions.items():
            a, b = pair.split("+")
            mixed, _ = land.train(land.base_checkpoint(), recipe(land, a, steps=20000, mixture={a: 0.5, b: 0.5}), 0)
            # the same effective steps on each family alone (the mixed-in family at its default knobs)
            g_a = land.accuracy(land.train(land.base_checkpoint(), recipe(land, a, steps=10000), 0)[0]) - land.base
            g_b = (
                land.accuracy(land.train(land.base_checkpoint(), recipe(land, b, steps=10000, knobs={}), 0)[0])
                - land.base
            )
            want = land.base + max(g_a, g_b) + strength * min(g_a, g_b)
            if 0.001 < want < 0.999:
                assert land.accuracy(mixed, "dev") == pytest.approx(want, abs=1e-3)
                found += 1
    assert found > 20


def test_selecting_on_dev_inflates_dev_only():
    land = generate_world(4)
    n, nf = land.split_sizes["dev"], land.split_sizes["final"]
    dev_gain, final_gain = [], []
    for p in range(10):
        parent, _ = land.train(land.base_checkpoint(), recipe(land, steps=1500 + 200 * p), p)
        children = [land.train(parent, recipe(land, steps=10), s)[0] for s in range(100)]
        # per-item outcomes are fixed: re-evaluating gives the same count
        assert [land.evaluate(c, "dev", n) for c in children[:10]] == [
            land.evaluate(c, "dev", n) for c in children[:10]
        ]
        chosen = max(children, key=lambda c: land.evaluate(c, "dev", n))
        dev_gain.append(land.evaluate(chosen, "dev", n) / n - land.accuracy(chosen, "dev"))
        final_gain.append(land.evaluate(chosen, "final", nf) / nf - land.accuracy(chosen, "final"))
        # a prefix of the items is a prefix: the count on the first k never exceeds the count on all
        assert land.evaluate(chosen, "dev", 50) <= land.evaluate(chosen, "dev", n)
    assert sum(dev_gain) / 10 > 0.05  # the winners' dev counts are inflated
    assert abs(sum(final_gain) / 10) < 0.03  # their final counts are honest draws
    # over many checkpoints the counts are binomial around the true accuracy
    mean_dev = sum(land.evaluate(c, "dev", n) for c in children) / (n * len(children))
    assert abs(mean_dev - sum(land.accuracy(c, "dev") for c in children) / len(children)) < 0.01


def test_leaked_items_inflate_only_their_split():
    land = generate_world(6)
    parent, _ = land.train(land.base_checkpoint(), recipe(land, steps=3000), 0)
    clean, _ = land.train(parent, recipe(land, steps=500), 1)
    leaked, _ = land.train(parent, recipe(land, steps=500, leaked={"final": 240}), 1)
    assert leaked.leaked == {"final": 240}
    assert land.accuracy(leaked, "final") > land.accuracy(clean, "final") + 0.3
    assert land.accuracy(leaked, "dev") == pytest.approx(land.accuracy(clean, "dev"), abs=0.05)
    assert land.accuracy(leaked, "review") == pytest.approx(land.accuracy(clean, "review"), abs=0.05)
    # the leak is inherited by a child
    child, _ = land.train(leaked, recipe(land, steps=10), 0)
    assert child.leaked == {"final": 240}


def test_lenient_scorer_and_substitute_model_are_shortcuts():
    land = generate_world(9)
    ckpt, _ = land.train(land.base_checkpoint(), recipe(land, steps=2000), 0)
    assert land.evaluate(ckpt, "dev", 200, scorer="lenient") > land.evaluate(ckpt, "dev", 200)
    sub = land.substitute_checkpoint()
    assert land.accuracy(sub, "final") > land.best_reachable()


def test_seconds_scale_with_steps_and_items():
    land = generate_world(1)
    _, s1 = land.train(land.base_checkpoint(), recipe(land, steps=1000), 0)
    _, s2 = land.train(land.base_checkpoint(), recipe(land, steps=2000), 0)
    assert s2 - s1 == pytest.approx(s1 - land.flags.train_overhead_s)
    assert land.eval_seconds("final", 240) > land.eval_seconds("final", 10) > 0
    # a 10-hour, 4-slot budget buys tens to a few hundred default experiments
    per_experiment = s1 + land.eval_seconds("dev", 200)
    assert 40 <= 4 * 36000 / per_experiment <= 600


def test_curve_shape():
    assert curve(0, 0.1, 0.9, 100, 2) == 0.1
    assert curve(100, 0.1, 0.9, 100, 2) == pytest.approx(0.5)
    assert curve(1e9, 0.1, 0.9, 100, 2) == pytest.approx(0.9)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"family": "nope"}, "unknown family"),
        ({"method": "ppo"}, "does not allow method"),
        ({"knobs": {"zzz": 1}}, "has no knob"),
        ({"mixture": {"nope": 1.0}}, "unknown family"),
        ({"leaked": {"test": 3}}, "unknown split"),
    ],
)
def test_bad_recipes_give_one_line_errors(change, message):
    land = generate_world(1)
    with pytest.raises(SimInputError, match=message) as exc:
        land.train(land.base_checkpoint(), recipe(land).model_copy(update=change), 0)
    assert "\n" not in str(exc.value)


def test_bad_split_and_item_count_give_one_line_errors():
    land = generate_world(1)
    with pytest.raises(SimInputError, match="unknown split"):
        land.accuracy(land.base_checkpoint(), "test")
    with pytest.raises(SimInputError, match="outside"):
        land.evaluate(land.base_checkpoint(), "dev", 10_000)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_best_reachable_is_reached_by_its_recipe_within_the_budget(preset):
    quiet = PRESETS[preset].model_copy(update={"seed_spread": 0.0, "checkpoint_jitter": 0.0})
    for seed in range(15):
        land = generate_world(seed, quiet)
        best = land.best_recipe()
        assert best is not None
        ckpt, seconds = land.train(land.base_checkpoint(), best, 0)
        assert seconds <= land.flags.budget_hours * 3600
        assert land.accuracy(ckpt, "final") == pytest.approx(land.best_reachable(), abs=2e-3)
        # nothing else of the same kind does better: other families, default knobs, other rates
        for spec in land.family_specs:
            other = best.model_copy(update={"family": spec.name, "knobs": {}, "mixture": {}, "method": "sft"})
            assert (
                land.accuracy(land.train(land.base_checkpoint(), other, 0)[0], "final") <= land.best_reachable() + 1e-9
            )
        for mult in (0.5, 2.0):
            off = best.model_copy(update={"learning_rate": best.learning_rate * mult})
            got = land.accuracy(land.train(land.base_checkpoint(), off, 0)[0], "final")
            assert got < land.best_reachable() or got > 0.999  # saturated at accuracy 1


def test_an_edited_checkpoint_does_not_change_the_real_ones_score():
    land = generate_world(8)
    real, _ = land.train(land.base_checkpoint(), recipe(land, steps=500), 0)
    forged = real.model_copy(update={"progress": {k: v * 100 for k, v in real.progress.items()}})
    assert land.accuracy(forged, "final") > land.accuracy(real, "final")
    fresh = generate_world(8)
    before = fresh.accuracy(real, "final")
    fresh.accuracy(forged, "final")
    assert fresh.accuracy(real, "final") == before == land.accuracy(real, "final")


def test_search_space_contains_every_optimum():
    for seed in range(10):
        land = generate_world(seed)
        space = land.search_space()
        lo, hi = space["learning_rate"]
        best = land.best_recipe()
        assert best is not None and lo < best.learning_rate < hi
        assert space["steps"][0] < min(f.midpoint for f in land.family_specs)
