"""`best_reachable`: the generator's ground truth for normalising a campaign's score.

It is the expected `final` accuracy (split shift included, no checkpoint jitter, no seed noise,
no leaks) of the best single lineage that fits the budget on one slot: every family and
method the family allows at its optimal knob values and learning rate, and every two-family
mixture of an interacting pair (sft; weights 1/4, 1/2, 3/4; the recipe's own family at its
optimal knobs, the family mixed in at its defaults, as a recipe can ask), each trained on fresh data
(no repeats) for `budget_hours` of simulated time less one training start, at the batch size
(4 to 256, powers of two) that gives the most effective steps in that time. Evaluation time is
not charged. A campaign that spreads its budget over several slots in parallel can exceed it
only by luck (seed noise, selection on noisy scores), by exploiting interactions at other
weights, or by shortcuts; normalised scores near or above 1 mean the strategy found the best
direction and spent the budget on it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ._curves import curve
from ._model import SimRecipe

if TYPE_CHECKING:
    from ._world import SimWorld

__all__ = ["reachable", "reachable_detail"]

BATCHES = (4, 8, 16, 32, 64, 128, 256)
WEIGHTS = (0.25, 0.5, 0.75)


def _plan(land: SimWorld, method: str) -> tuple[float, int, int]:
    """(effective steps, steps, batch): the most effective steps one slot buys in the budget
    with `method` at the optimal learning rate on fresh data."""
    fl = land.flags
    seconds = fl.budget_hours * 3600.0 - fl.train_overhead_s
    best = (0.0, 1, 32)
    for batch in BATCHES:
        b = batch / 32.0
        step_s = (
            fl.seconds_per_step * land.method_specs[method].seconds * (fl.step_overhead + (1 - fl.step_overhead) * b)
        )
        steps = max(1, int(seconds / step_s))
        best = max(best, (steps * b**fl.batch_exponent, steps, batch))
    return best


def _recipe(land: SimWorld, family: str, method: str, mixture: dict[str, float] | None = None) -> SimRecipe:
    spec = land._fam[family]
    _, steps, batch = _plan(land, method)
    lr = spec.lr_optimum * land.method_specs[method].lr * math.sqrt(batch / 32.0)
    return SimRecipe(
        family=family,
        knobs={k.name: k.optimum for k in spec.knobs},
        method=method,
        learning_rate=lr,
        batch_size=batch,
        steps=steps,
        rows=steps * batch,
        lora_rank=16 if method == "lora" else None,
        mixture=mixture or {},
    )


def reachable_detail(land: SimWorld) -> tuple[float, SimRecipe | None]:
    """(best_reachable before the final split's shift, the recipe that reaches it from the base
    checkpoint in one experiment; None when nothing beats the base model)."""
    best, what = land.base, None
    for spec in land.family_specs:
        for method in spec.methods:
            x = _plan(land, method)[0]
            key = land.direction_key(spec.name, method, {k.name: k.optimum for k in spec.knobs})
            p = curve(x, land.base, *land.direction_curve(key))
            if p > best:
                best, what = p, _recipe(land, spec.name, method)
    x = _plan(land, "sft")[0]
    for pair, strength in land.interactions.items():
        a, b = pair.split("+", 1)
        # a recipe sets the knobs of its own family; a family mixed in comes at its defaults
        for main, other in ((a, b), (b, a)):
            k1 = land.direction_key(main, "sft", {k.name: k.optimum for k in land._fam[main].knobs})
            k2 = land.direction_key(other, "sft", {})
            for w in WEIGHTS:
                g1 = curve(w * x, land.base, *land.direction_curve(k1)) - land.base
                g2 = curve((1 - w) * x, land.base, *land.direction_curve(k2)) - land.base
                p = land.base + max(g1, g2) + strength * max(min(g1, g2), 0.0)
                if p > best:
                    best, what = p, _recipe(land, main, "sft", {main: w, other: 1 - w})
    return min(max(best, 0.0), 1.0), what


def reachable(land: SimWorld) -> float:
    p, _ = reachable_detail(land)
    p = min(max(p, 1e-4), 1 - 1e-4)
    return 1.0 / (1.0 + math.exp(-(math.log(p / (1 - p)) + land.split_shift["final"])))
