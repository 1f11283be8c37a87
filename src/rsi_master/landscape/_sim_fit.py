"""The simulator's calibration against this landscape: its curves as plain points for
`rsi_master.sim` (which sits below this package and cannot read it), fitted there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..sim import fit_curves
from ..tasks import EVAL_SIZE
from ._file import SHIPPED, load
from ._model import Landscape

if TYPE_CHECKING:
    from ..sim._calibrate import CalibrationFit

__all__ = ["sim_calibration"]


def sim_calibration(landscape: Landscape | None = None) -> CalibrationFit:
    """Fit the simulator's curve model to every measured curve (the shipped file by default)."""

    land = landscape if landscape is not None else load(SHIPPED)
    curves: dict[str, list[tuple[float, float, list[float]]]] = {}
    base: dict[str, float] = {}
    per_step: list[float] = []
    for task, tl in land.tasks.items():
        base[task] = float(tl.base.score_dev or tl.base.score or 0.0) if tl.base else 0.0
        for label, c in tl.curves.items():
            pts = [(float(p.step), p.score, list(p.per_seed)) for p in c.points if p.step]
            curves[f"{task}/{label}"] = pts
            if c.train_seconds and pts:
                per_step.append(c.train_seconds / max(p[0] for p in pts))
    return fit_curves(curves, base, per_step, items=EVAL_SIZE)
