"""`best_reachable`: the generator's ground truth for normalising a campaign's score.

It is the expected `final` accuracy (split shift included, no checkpoint jitter, no seed noise,
no leaks) of the best single lineage that fits the budget on one slot: every family and
method the family allows at its optimal knob values and learning rate, and every two-family
mixture (weights 1/4, 1/2, 3/4, sft) of an interacting pair, each trained on fresh data
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

if TYPE_CHECKING:
    from ._landscape import SimLandscape

__all__ = ["reachable", "reachable_detail"]

BATCHES = (4, 8, 16, 32, 64, 128, 256)
WEIGHTS = (0.25, 0.5, 0.75)


def _steps(land: SimLandscape, method: str) -> float:
    """Most effective steps one slot buys in the budget with `method` (optimal lr, fresh data)."""
    fl = land.flags
    seconds = fl.budget_hours * 3600.0 - fl.train_overhead_s
    if seconds <= 0:
        return 0.0
    best = 0.0
    for batch in BATCHES:
        b = batch / 32.0
        step_s = (
            fl.seconds_per_step * land.method_specs[method].seconds * (fl.step_overhead + (1 - fl.step_overhead) * b)
        )
        best = max(best, seconds / step_s * b**fl.batch_exponent)
    return best


def reachable_detail(land: SimLandscape) -> tuple[float, str]:
    """(best_reachable before the final split's shift, what reaches it)."""
    best, what = land.base, "base"
    gains: dict[str, float] = {}
    steps: dict[str, float] = {}
    for spec in land.family_specs:
        for method in spec.methods:
            x = steps.setdefault(method, _steps(land, method))
            key = land.direction_key(spec.name, method, {k.name: k.optimum for k in spec.knobs})
            plateau, mid, slope = land.direction_curve(key)
            p = curve(x, land.base, plateau, mid, slope)
            if method == "sft":
                gains[spec.name] = p - land.base
            if p > best:
                best, what = p, key
    x = steps.setdefault("sft", _steps(land, "sft"))
    for pair, strength in land.interactions.items():
        a, b = pair.split("+", 1)
        ka = land.direction_key(a, "sft", {k.name: k.optimum for k in land._fam[a].knobs})
        kb = land.direction_key(b, "sft", {k.name: k.optimum for k in land._fam[b].knobs})
        for w in WEIGHTS:
            ga = curve(w * x, land.base, *land.direction_curve(ka)) - land.base
            gb = curve((1 - w) * x, land.base, *land.direction_curve(kb)) - land.base
            p = land.base + max(ga, gb) + strength * math.sqrt(max(ga, 0.0) * max(gb, 0.0))
            if p > best:
                best, what = p, f"mixture {a}:{w} + {b}:{1 - w}"
    return min(max(best, 0.0), 1.0), what


def reachable(land: SimLandscape) -> float:
    p, _ = reachable_detail(land)
    p = min(max(p, 1e-4), 1 - 1e-4)
    return 1.0 / (1.0 + math.exp(-(math.log(p / (1 - p)) + land.split_shift["final"])))
