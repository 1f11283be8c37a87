"""`landscape.sim_pilot`: a simulated landscape's prior is what a pilot measures on `dev` through
the simulator's public actions (no ground truth), in the landscape file format, the same bytes
for the same landscape."""

from __future__ import annotations

import pytest

from rsi_master.landscape import PILOT_MULTIPLES, PILOT_SEEDS, PILOT_UNIT, dumps, loads, pilot_seconds, sim_pilot
from rsi_master.sim import PRESETS, generate_world


class _PublicOnly:
    """A landscape as a lab sees it: it can train from the base model and score on `dev`; the
    hidden parameters, ground-truth accuracy and the protected splits raise."""

    def __init__(self, land):
        self._land = land
        self.task_name, self.ident, self.seed = land.task_name, land.ident, land.seed
        self.split_sizes = {"dev": land.split_sizes["dev"]}

    def families(self):
        return self._land.families()

    def base_checkpoint(self):
        return self._land.base_checkpoint()

    def train(self, parent, recipe, seed):
        return self._land.train(parent, recipe, seed)

    def evaluate(self, ckpt, split, n):
        assert split == "dev", split
        return self._land.evaluate(ckpt, split, n)

    def __getattr__(self, name):
        raise AssertionError(f"the pilot read {name!r}")


def test_the_pilot_reads_only_what_a_lab_can_measure_and_is_deterministic():
    land = generate_world(3)
    prior = sim_pilot(land)
    assert dumps(sim_pilot(_PublicOnly(land))) == dumps(prior)
    assert dumps(sim_pilot(generate_world(3))) == dumps(prior)  # from the seed alone
    assert dumps(sim_pilot(generate_world(4))) != dumps(prior)


@pytest.mark.parametrize("preset", ["default", "hard", "calibrated"])
def test_the_pilot_is_a_landscape_file_with_one_curve_per_family(preset):
    land = generate_world(2, PRESETS[preset], preset=preset)
    prior = loads(dumps(sim_pilot(land)))  # the file format reads it back
    assert set(prior.tasks) == {land.task_name}
    curves = prior.curves(land.task_name)
    assert set(curves) == set(land.families())
    assert prior.default_experiment.examples == PILOT_UNIT
    n = land.split_sizes["dev"]
    for c in curves.values():
        assert [p.multiple for p in c.points] == list(PILOT_MULTIPLES)
        for p in c.points:  # each seed's score is whole items of the dev split
            assert len(p.per_seed) == PILOT_SEEDS and all(abs(s * n - round(s * n)) < 1e-6 for s in p.per_seed)
        assert c.tokens == c.points[-1].examples and c.train_seconds and c.train_seconds > 0
    assert pilot_seconds(prior) == pytest.approx(sum(c.train_seconds * PILOT_SEEDS for c in curves.values()))
