"""Learning-curve extrapolation from a run's own evidence: what a direction's `dev` score will
be after more training, and how sure that is.

The model is the saturating curve y(t) = a + b * (1 - exp(-(t - t0)+ / tau)) over t, the
training examples behind a checkpoint (its lineage back to the base model). `a` is the score
before training (the caller's `floor`: the base model's, or the run's lowest), `b` in
[0, 1 - a] the headroom the direction gains, `tau` how much training it takes, and `t0` the
onset: small models often score nothing until a format is learned, then climb, and a curve
without an onset would read such a climb as already bending over. With the two or three points
a direction has in a short campaign no single fit is identified, so the forecast averages over
a grid of (`t0`, `tau`): `tau` log-spaced (a log-uniform prior from a fiftieth of the shortest
lineage seen to a hundred times the farthest one asked about), `t0` at fractions of the
farthest lineage seen (uniform), each weighted by its likelihood under binomial noise on the
evaluation's item count, with `b` fitted in closed form for each pair (the model is linear in
it) and its own standard error carried into the prediction. A fast curve that has
flattened is then forecast flat with a small spread; a curve still rising at its last point
keeps the slow `tau` values alive and is forecast higher, with a spread that widens the farther
it is extrapolated. Vectorised over the grid (numpy): the Main calls it at every decision.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["Forecast", "forecast"]

GRID = 24  # tau values; the forecast moves by about a point between 24 and 60
ONSETS = 10  # onset values besides none
# Most points a fit reads: beyond, neighbours (by training) are pooled, each pool weighted by its
# size, so that a long campaign's hundreds of experiments cost a decision what a few dozen do.
MAX_POINTS = 12
# The noise floor of a score: a binomial variance at p = 5%, so that a string of zeros on a
# small split is not taken as exact (0 of 50 items is compatible with a true 2%).
MIN_P = 0.05


@dataclass(frozen=True)
class Forecast:
    """A direction's `dev` score expected at an amount of training: its `mean` and standard
    deviation `std` (the spread over the curves the evidence allows, and each curve's own
    parameter error), from `n` measured points."""

    mean: float
    std: float
    n: int
    parts: tuple[tuple[float, float, float], ...] = field(default=(), repr=False)  # (weight, mean, std) per curve

    def ucb(self, kappa: float) -> float:
        """The optimistic value `mean + kappa * std` (an upper confidence bound)."""
        return self.mean + kappa * self.std

    def gain(self, best: float, widen: float = 0.0) -> float:
        """The expected improvement over `best`, E[max(0, score - best)], over the curves the
        evidence allows (each a normal of its mean and std, `widen` added in quadrature): a
        flat leader at `best` promises little, a lineage that may still turn promises the
        chance that it does times how far."""
        out = 0.0
        for w, m, sd in self.parts or ((1.0, self.mean, self.std),):
            sd = math.sqrt(sd * sd + widen * widen)
            if sd < 1e-9:
                out += w * max(0.0, m - best)
                continue
            z = (m - best) / sd
            out += w * (
                (m - best) * 0.5 * (1 + math.erf(z / math.sqrt(2))) + sd * math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
            )
        return out


def _variance(y: float, n_items: float) -> float:
    p = min(max(y, MIN_P), 1.0 - MIN_P)
    return p * (1.0 - p) / max(1.0, n_items)


def _pooled(pts: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """(training, mean score, weight): at most `MAX_POINTS` pools of neighbouring (training, score,
    weight) points, each pool's score weighted and its weight the sum of its points'."""
    pts = sorted(pts)
    k = -(-len(pts) // MAX_POINTS)  # points per pool
    out = []
    for i in range(0, len(pts), k):
        part = pts[i : i + k]
        w = sum(c for _, _, c in part)
        out.append((sum(t for t, _, _ in part) / len(part), sum(y * c for _, y, c in part) / w, w))
    return out


def forecast(
    points: Iterable[tuple[float, float] | tuple[float, float, float]],
    at: float,
    *,
    floor: float = 0.0,
    n_items: int = 50,
) -> Forecast:
    """The forecast at `at` training examples from measured (examples, score) `points` of one
    direction, each optionally with a weight in (0, 1] (a point of weight w counts as measured on
    w x `n_items` items: a Worker whose claims a review contradicted); `floor` is the score
    before any training, `n_items` the items a score was measured on. Without points: the floor,
    with the widest spread the headroom allows (a uniform guess over [floor, 1]). Remembered: the
    Main asks again at every decision, and a direction's points change only when one of its
    experiments ends."""
    pts = tuple(sorted((float(p[0]), float(p[1]), float(p[2]) if len(p) > 2 else 1.0) for p in points))
    return _forecast(pts, float(at), float(floor), int(n_items))


@lru_cache(maxsize=4096)
def _forecast(points: tuple[tuple[float, float, float], ...], at: float, floor: float, n_items: int) -> Forecast:
    a = min(max(float(floor), 0.0), 1.0)
    room = 1.0 - a
    # The prior of the headroom b: uniform over [0, room] (as a normal of its mean and variance,
    # conjugate to the fit), so that a curve the points say nothing about forecasts that guess.
    b0, v0 = room / 2, max(room * room / 12, 1e-12)
    raw = [(max(0.0, t), min(max(y, 0.0), 1.0), min(max(w, 1e-3), 1.0)) for t, y, w in points]
    if not raw:
        return Forecast(mean=a + b0, std=math.sqrt(v0), n=0, parts=((1.0, a + b0, math.sqrt(v0)),))
    pooled = _pooled(raw)
    pts = [(t, y) for t, y, _ in pooled]
    at = max(0.0, float(at))
    seen = [t for t, _ in pts if t > 0]
    lo = (min(seen) if seen else 1.0) / 50
    far = max([at, *seen, 1.0])
    taus = [lo * (100 * far / lo) ** (i / (GRID - 1)) for i in range(GRID)]
    reach = max([*seen, 1.0])
    # Onsets: none, or log-uniform from a twentieth of the farthest lineage measured to twenty
    # times past the forecast's horizon: a curve flat so far may still turn, less likely the
    # longer it has stayed flat.
    onsets = [0.0, *(reach / 20 * (400 * far / reach) ** (i / (ONSETS - 1)) for i in range(ONSETS))]
    import numpy as np  # here, not at import: `rsi-master --help` stays light

    var = np.array([_variance(y, n_items * c) for _, y, c in pooled])
    ts = np.array([t for t, _ in pts])
    ys = np.array([y for _, y in pts]) - a
    t0s = np.repeat(np.array(onsets), len(taus))[:, None]  # every (onset, tau) pair, onset-major
    tau = np.tile(np.array(taus), len(onsets))[:, None]
    f = 1.0 - np.exp(-np.maximum(0.0, ts[None, :] - t0s) / tau)  # pairs x points
    info = (f * f / var).sum(axis=1)
    g = 1.0 - np.exp(-np.maximum(0.0, at - t0s[:, 0]) / tau[:, 0])
    fit = (f * ys / var).sum(axis=1)
    var_b = 1.0 / (info + 1.0 / v0)
    b = np.minimum(np.maximum((fit + b0 / v0) * var_b, 0.0), room)
    logs = -0.5 * (((ys - b[:, None] * f) ** 2) / var).sum(axis=1)
    means, sds = a + b * g, g * np.sqrt(var_b)
    w = np.exp(logs - logs.max())
    total = float(w.sum())
    mean = float((w * means).sum()) / total
    second = float((w * (sds * sds + means * means)).sum()) / total
    std = math.sqrt(max(0.0, second - mean * mean))
    share = w / total
    keep = share > 1e-4
    parts = tuple(zip(share[keep].tolist(), means[keep].tolist(), sds[keep].tolist(), strict=True))
    return Forecast(mean=min(max(mean, 0.0), 1.0), std=std, n=len(raw), parts=parts)
