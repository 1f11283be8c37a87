"""Gains on `dev` that do not generalise (the `dev_gap` flag; 0 in every preset but `agents`).

Three recipes raise `dev` more than `review` and `final`, as they do on real benchmarks whose
`dev` split is small and shares a format: training far past a direction's plateau (the curve
is flat; `dev` keeps creeping up), many repeats of a small dataset (memorising what `dev`'s items
look like; the checkpoint's `dev_fit`, inherited and forgotten like progress) and a data format
the `dev` items share (one choice value of a family's choice knob, `SimWorld.dev_format`).
How much a family is prone to them is its own (`SimWorld.dev_prone`, 0 to 2, mean 1): the
gap depends on the direction, so ranking lineages by `dev` is not ranking them by `review`. A
lineage can keep "improving" on `dev` while `review` is flat: the gap a Reviewer's check on
`review` exists to see.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

__all__ = ["draw_dev_formats", "draw_dev_prone", "past_plateau", "repeat_fit"]

PAST_FROM = 2.0  # multiples of the midpoint where overtraining starts to pay on dev only
PAST_FULL_DECADES = 1.0  # ... and pays fully a decade later
FORMAT_SHARE = 0.5  # the dev format's gain, as a share of the full overfit gain, at full progress
REPEATS_FULL = 20.0  # passes over the data at which memorising pays fully


def draw_dev_formats(
    rng: np.random.Generator, families: Iterable[tuple[str, list[tuple[str, list[str]]]]]
) -> dict[str, str]:
    """family -> `knob=value`: the choice value whose format the dev items share (first choice knob)."""
    out = {}
    for name, choice_knobs in families:
        if choice_knobs:
            knob, choices = choice_knobs[0]
            out[name] = f"{knob}={choices[int(rng.integers(len(choices)))]}"
    return out


def draw_dev_prone(rng: np.random.Generator, families: list[str]) -> dict[str, float]:
    """family -> how prone its recipes are to dev-only gains (uniform 0..2: some not at all)."""
    return {f: round(float(rng.uniform(0.0, 2.0)), 3) for f in families}


def past_plateau(
    progress: dict[str, float],
    direction: Callable[[str], tuple[str, float, float, float]],
    curve_at: Callable[[float, float, float, float], float],
    base: float,
    dev_format: dict[str, str],
    prone: dict[str, float],
) -> float:
    """The dev-only gain of the checkpoint's directions (before `dev_gap` scales it): overtraining
    past the plateau, and the dev format in proportion to how far the direction has learnt."""
    best = 0.0
    for key, x in progress.items():
        fam, plateau, mid, slope = direction(key)
        span = plateau - base
        if span <= 0 or x <= 0:
            continue
        past = min(1.0, max(0.0, math.log10(x / (PAST_FROM * mid)) / PAST_FULL_DECADES))
        fmt = dev_format.get(fam)
        share = (curve_at(x, plateau, mid, slope) - base) / span
        fit = past + (FORMAT_SHARE * share if fmt is not None and fmt in key.split("|", 2)[2].split(",") else 0.0)
        best = max(best, prone.get(fam, 1.0) * span * min(1.0, fit))
    return best


def repeat_fit(repeats: float, span: float, dev_gap: float) -> float:
    """The dev-only gain of one training run that passes `repeats` times over its data."""
    if repeats <= 1.0 or dev_gap <= 0.0:
        return 0.0
    return dev_gap * span * min(1.0, math.log(repeats) / math.log(REPEATS_FULL))
