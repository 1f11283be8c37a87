"""How long a Worker's trials take: priced from its own trials, else from the run's
measurements of the machine, else from defaults; the batch sizes a direction may shrink to
when the shortest trial at its drawn batch does not fit the time left."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._directions import Direction
from ._memory import Trial

__all__ = [
    "CALIBRATION_EXAMPLES",
    "DEFAULT_EXAMPLE_S",
    "DEFAULT_STEP_S",
    "FIXED_OVERHEAD_S",
    "MIN_STEPS",
    "calibrated",
    "cheapest_batch",
    "fitting_batch",
    "min_trial_seconds",
    "trial_seconds",
]

# A trial is more than its optimizer steps: data generation, process start-up, saving
# and the dev evaluation. Used until the Worker has measured its own trials.
FIXED_OVERHEAD_S = 25.0
DEFAULT_STEP_S = 2.0  # a step of batch 8; priced per example where the batch size is known
DEFAULT_EXAMPLE_S = DEFAULT_STEP_S / 8
MIN_STEPS = 10
CALIBRATION_EXAMPLES = 160  # the measuring trial: 20 steps of batch 8, 80 of batch 2


def min_trial_seconds(timing: dict[str, float], batch_size: int | None = None) -> float:
    """The shortest trial a Worker runs (`MIN_STEPS` steps and a trial's fixed overhead),
    priced from this run's measurements of the machine (`run_timing`), else the defaults; at
    `batch_size`, its steps are priced per example (as `trial_seconds` prices them)."""
    per_step, fixed = trial_seconds([], timing, batch_size)
    return fixed + MIN_STEPS * per_step


def trial_seconds(
    memory: Sequence[Trial], timing: dict[str, float] | None = None, batch_size: int | None = None
) -> tuple[float, float]:
    """(seconds per step, fixed seconds per trial): the Worker's own trials, else the run's
    measurements of this machine (any Worker's finished experiments), else defaults.

    With `batch_size`, a step's time is priced per example (a step of batch 16 takes about
    twice one of batch 8), so that a Worker that measured one batch size and draws a larger
    one does not plan more steps than fit. Where its trials report their time in the
    training loop, the rest of each trial is its own measured overhead, since the 25 s
    default would price the steps of a short calibration trial at nothing. The default
    before any measurement is priced per example too, so that a small-batch measuring trial
    is not cut short."""
    timing = timing or {}
    fixed = float(timing.get("overhead_s", FIXED_OVERHEAD_S))
    done = [m for m in memory if m.seconds and m.steps]
    timed = [m for m in done if m.train_seconds is not None]
    if timed:
        fixed = sum(max(0.0, _f(m.seconds) - _f(m.train_seconds)) for m in timed) / len(timed)
        train_s = sum(_f(m.train_seconds) for m in timed)
        done = timed
    else:
        train_s = sum(max(0.0, _f(m.seconds) - fixed) for m in done)
    if done and batch_size:  # its own trials are the closest measure (same data lengths, same load)
        per_step = train_s / sum(int(m.steps or 0) * m.batch for m in done) * batch_size
    elif done:
        per_step = train_s / sum(int(m.steps or 0) for m in done)
    elif batch_size and "example_s" in timing:
        per_step = float(timing["example_s"]) * batch_size
    elif "step_s" in timing:
        per_step = float(timing["step_s"])
    elif batch_size:  # a step of batch 2 is not priced like one of batch 8
        per_step = DEFAULT_EXAMPLE_S * batch_size
    else:
        per_step = DEFAULT_STEP_S
    return max(per_step, 0.02), fixed


def calibrated(memory: Sequence[Trial], timing: dict[str, float] | None) -> bool:
    t = timing or {}
    return bool(t.get("step_s") or t.get("example_s")) or any(m.seconds and m.steps for m in memory)


def _f(x: float | None) -> float:
    return float(x or 0.0)


def _batch_sizes(d: Direction) -> list[int]:
    """The batch sizes the direction may train at, smallest first."""
    r = d.train.get("batch_size")
    if r is None:
        return [8]
    values = r.choices if r.kind == "choice" else [r.value] if r.kind == "fixed" else [r.low]
    sizes = [int(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0]
    return sorted(set(sizes)) or [8]


def cheapest_batch(d: Direction) -> int:
    """The cheapest step the direction can take (whether any trial still fits)."""
    return _batch_sizes(d)[0]


def fitting_batch(d: Direction, drawn: int, price: Callable[[int], tuple[float, float]], left: float) -> int:
    """The largest of the direction's batch sizes below `drawn` whose shortest trial fits in
    `left` seconds (`price(batch)`: seconds per step and per trial), else its smallest."""
    fits = [b for b in _batch_sizes(d) if b < drawn and price(b)[1] + MIN_STEPS * price(b)[0] <= left]
    return max(fits) if fits else min(drawn, cheapest_batch(d))
