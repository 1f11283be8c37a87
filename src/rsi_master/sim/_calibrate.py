"""Fit the generator's curve model to measured learning curves, and the `calibrated` flags from it.

Input is plain data (sim sits below `landscape` in the layers): per curve, its points as
(steps, mean score, per-seed scores). `benchmarks/sim_calibrate.py` reads the built-in suite's
curves through `rsi_master.landscape` and prints the figure this module computes.

Each curve with at least four points gets its own `curve(steps, base, plateau, midpoint, slope)`
by least squares (a grid over midpoint and slope, the plateau in closed form, clipped to
[0, 1]), each point weighted by its number of seeds. The fit error is the root mean square of
the residuals (the fit itself weights each point by its seeds) with the degrees of freedom
taken out (three parameters per curve), set against
the seed-to-seed spread: the pooled standard deviation between seeds at the points measured
with two or more seeds. A ratio near 1 means the model describes the curves as well as a
second seed would; the generator cannot be told apart from the measurements by their shape.
The generator's `seed_spread` (noise on a run's effective progress) is then chosen so that it,
with binomial evaluation noise on the split's items, reproduces the measured pooled seed sd at
the same points (`simulated_seed_sd`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["CalibrationFit", "CurveFit", "fit_curves"]

Point = tuple[float, float, Sequence[float]]  # (steps, mean score, per-seed scores)
MID_GRID = np.exp(np.linspace(math.log(30.0), math.log(1e6), 160))
SLOPE_GRID = np.linspace(0.4, 12.0, 117)
MIN_POINTS = 4


@dataclass(frozen=True)
class CurveFit:
    name: str
    plateau: float
    midpoint: float
    slope: float
    points: int
    rss: float  # residual sum of squares (unweighted, for the report)


@dataclass(frozen=True)
class CalibrationFit:
    fits: tuple[CurveFit, ...]
    rms_error: float  # dof-corrected, seed-weighted
    seed_sd: float  # pooled sd between seeds
    seed_points: int  # points with two or more seeds
    seed_spread: float  # the generator's seed_spread (sd of log progress) that explains seed_sd
    seconds_per_step: float | None
    simulated_seed_sd: float  # what the generator's noise (seed_spread + evaluation) gives at the same points

    @property
    def ratio(self) -> float:
        return self.rms_error / self.seed_sd if self.seed_sd else math.inf

    def flags(self, base: float = 0.0) -> dict[str, object]:
        """The `calibrated` preset's flags: the 15th to 85th percentiles of the fitted curves at the
        default batch (curves `@bN` measure another batch; the extremes are curves that had not
        bent yet, whose plateau and midpoint the points do not pin down), and the median number
        of distinct families per task."""
        fits = [f for f in self.fits if "@b" not in f.name]

        def span(values: list[float], lo: float, hi: float, digits: int) -> tuple[float, float]:
            a, b = np.percentile(values, [15, 85])
            return round(float(max(a, lo)), digits), round(float(min(b, hi)), digits)

        families: dict[str, set[str]] = {}
        for f in fits:
            task, label = f.name.split("/", 1)
            families.setdefault(task, set()).add(label.split("[")[0].split("+")[0])
        return {
            "n_families": max(2, round(float(np.median([len(v) for v in families.values()])))),
            "base_accuracy": (round(base, 3), round(base + 0.02, 3)),
            "plateau": span([f.plateau for f in fits], base + 0.05, 0.99, 3),
            "midpoint_steps": span([f.midpoint for f in fits], 1.0, 1e7, 0),
            "slope": span([f.slope for f in fits], 0.4, 12.0, 2),
            "seed_spread": round(self.seed_spread, 3),
            "seconds_per_step": round(self.seconds_per_step or 0.3, 3),
        }

    def lines(self) -> list[str]:
        out = [f"{'curve':44s} {'n':>2s} {'plateau':>7s} {'midpoint':>9s} {'slope':>5s} {'rms':>6s}"]
        for f in self.fits:
            rms = math.sqrt(f.rss / max(1, f.points))
            out.append(f"{f.name:44s} {f.points:2d} {f.plateau:7.3f} {f.midpoint:9.0f} {f.slope:5.2f} {rms:6.3f}")
        out += [
            "---",
            f"curves: {len(self.fits)}",
            f"fit_rms_error: {self.rms_error:.4f}",
            f"seed_sd: {self.seed_sd:.4f} (pooled over {self.seed_points} points with 2+ seeds)",
            f"fit_error_over_seed_sd: {self.ratio:.2f}",
            f"seed_spread_log_progress: {self.seed_spread:.3f}",
            f"simulated_seed_sd: {self.simulated_seed_sd:.4f} (the fitted curves with that spread and binomial items)",
            f"seconds_per_step: {self.seconds_per_step if self.seconds_per_step is None else round(self.seconds_per_step, 3)}",
        ]
        return out


def _fit_one(name: str, pts: Sequence[Point], base: float) -> CurveFit:
    s = np.array([p[0] for p in pts], dtype=float)
    y = np.array([p[1] for p in pts], dtype=float) - base
    w = np.array([max(1, len(p[2])) for p in pts], dtype=float)
    # shape[i, j, t] = 1 / (1 + (mid_i / s_t) ** slope_j); plateau gain by weighted least squares
    shape = 1.0 / (1.0 + (MID_GRID[:, None, None] / s[None, None, :]) ** SLOPE_GRID[None, :, None])
    num = (shape * (w * y)).sum(-1)
    den = (shape * shape * w).sum(-1)
    gain = np.clip(num / np.maximum(den, 1e-12), 0.0, 1.0 - base)
    rss = (w * (gain[..., None] * shape - y) ** 2).sum(-1)
    i, j = np.unravel_index(int(np.argmin(rss)), rss.shape)
    plain = float(((gain[i, j] * shape[i, j] - y) ** 2).sum())
    return CurveFit(name, float(base + gain[i, j]), float(MID_GRID[i]), float(SLOPE_GRID[j]), len(pts), plain)


def fit_curves(
    curves: Mapping[str, Sequence[Point]],
    base: Mapping[str, float] | None = None,
    seconds_per_step: Sequence[float] = (),
    items: int | None = None,
) -> CalibrationFit:
    """Fit every curve with at least MIN_POINTS points (names are `task/label`; `base` per task).
    `items`: the evaluation split's size; the generator's `seed_spread` is set so that its
    training noise plus binomial evaluation noise on `items` items reproduces the measured
    pooled seed sd at the same points."""
    fits: list[CurveFit] = []
    seed_sq, seed_dof, seed_pts = 0.0, 0, 0
    at: list[tuple[CurveFit, float, float, int]] = []  # (fit, base, steps, seeds) of multi-seed points
    for name, pts in sorted(curves.items()):
        pts = sorted(pts, key=lambda p: p[0])
        if len(pts) < MIN_POINTS:
            continue
        b = (base or {}).get(name.split("/", 1)[0], 0.0)
        fit = _fit_one(name, pts, b)
        fits.append(fit)
        for steps, _, per_seed in pts:
            if len(per_seed) >= 2:
                sd = float(np.std(per_seed, ddof=1))
                seed_sq += sd * sd * (len(per_seed) - 1)
                seed_dof += len(per_seed) - 1
                seed_pts += 1
                at.append((fit, b, steps, len(per_seed)))
    dof = sum(f.points for f in fits) - 3 * len(fits)
    rms = math.sqrt(sum(f.rss for f in fits) / max(1, dof))
    seed_sd = math.sqrt(seed_sq / seed_dof) if seed_dof else 0.0
    spread = _match_spread(at, seed_sd, items) if at else 0.2
    sps = float(np.median(seconds_per_step)) if len(seconds_per_step) else None
    return CalibrationFit(tuple(fits), rms, seed_sd, seed_pts, spread, sps, _simulated_sd(at, spread, items))


def _match_spread(at: list[tuple[CurveFit, float, float, int]], target: float, items: int | None) -> float:
    """The seed_spread whose simulated pooled sd equals the measured one (bisection; the sd
    grows with the spread), 0 when evaluation noise alone already explains it."""
    lo, hi = 0.0, 2.0
    if _simulated_sd(at, lo, items) >= target:
        return 0.0
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _simulated_sd(at, mid, items) < target else (lo, mid)
    return (lo + hi) / 2


def _simulated_sd(at: list[tuple[CurveFit, float, float, int]], spread: float, items: int | None) -> float:
    """Pooled seed sd the generator's own noise gives at the measured multi-seed points: the
    fitted curve at steps x exp(spread z), scored on `items` binomial items (seeded, 4000 runs)."""
    rng = np.random.default_rng(0)
    sq, dof = 0.0, 0
    for fit, base, steps, seeds in at:
        x = steps * np.exp(spread * rng.standard_normal(4000))
        p = base + (fit.plateau - base) / (1.0 + (fit.midpoint / x) ** fit.slope)
        scores = rng.binomial(items, p) / items if items else p
        sq += float(np.var(scores, ddof=1)) * (seeds - 1)
        dof += seeds - 1
    return math.sqrt(sq / dof) if dof else 0.0
