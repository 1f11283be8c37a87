"""What the landscape expects of a recipe: its curve's score at an amount of training.

Prior knowledge of the suite, measured by `rsi-master landscape measure`. It matters because
the landscape's leaders change with compute (arithmetic: answer-only leads to 1x, the
scratchpad from 2x on), so a 5-minute campaign and an hour-long one should not open the same
way.
"""

from __future__ import annotations

from ._file import load
from ._label import CURVE_BATCH, CurveLabel
from ._model import Curve, Landscape

__all__ = ["affordable_multiple", "expected_scores"]


def affordable_multiple(curve: Curve, slot_seconds: float, seconds_per_token: float) -> float | None:
    """How many default experiments of the curve's recipe `slot_seconds` of training buy: its
    tokens per default experiment times the landscape's seconds per token. None for a curve
    without points or tokens."""
    if not curve.points or not curve.tokens:
        return None
    return slot_seconds / (float(curve.tokens) / curve.horizon * seconds_per_token)


def expected_scores(task: str, slot_seconds: float, landscape: Landscape | None = None) -> dict[str, float]:
    """Curve label -> the `dev` score its measured learning curve reaches with `slot_seconds`
    of training. Labels are the landscape's: a family (`scratchpad`), a data selection of it
    (`scratchpad[ops=add]`), another method (`trace_then_program+lora`) or batch (`@b2`).

    A recipe without a curve gets no entry, and a curve at another batch size none past its
    horizon where the batch-8 curve of the recipe is there to read instead. `landscape`
    defaults to the file in force (`load()`)."""
    land = landscape if landscape is not None else load()
    s_per_token = land.seconds_per_token()
    if s_per_token is None:
        return {}
    curves = land.curves(task)
    out: dict[str, float] = {}
    for label, c in curves.items():
        m = affordable_multiple(c, slot_seconds, s_per_token)
        if m is None:
            continue
        parsed = CurveLabel.parse(label)
        if parsed.batch != CURVE_BATCH and m > c.horizon and str(parsed.at_batch(CURVE_BATCH)) in curves:
            continue
        out[label] = c.score_at(m)
    return out
