"""The run's clock: real time, or a simulated clock that a simulated backend installs.

Every reading of "now" that a run's records or decisions depend on (ledger event timestamps,
budgets, node deadlines, capability expiry) goes through `now()`, and every wait a run makes
goes through `sleep()`. By default both are the real ones. A simulated campaign installs its own
clock for the duration (`use_clock`), so the same code spends simulated seconds: the clock is
process-wide, and one process runs one simulated campaign at a time.

A new simulated run starts its clock at `SIM_EPOCH` (from its creation on: its contract, its
`orchestra.start` and everything after), never at the real time it was started: its ledger, event
timestamps and every duration and deadline read from them, is then a pure function of its world,
seed and settings. The real time leaks into nothing it records or decides.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol, runtime_checkable

__all__ = ["SIM_EPOCH", "Clock", "RealClock", "ScaledClock", "StillClock", "current", "now", "sleep", "use_clock"]

# 2026-01-01T00:00:00Z: where a new simulated run's clock starts. A whole second, so that an absolute
# simulated time rounded to the microsecond (a timestamp) or millisecond (a deadline) loses the
# same amount in every run.
SIM_EPOCH = 1767225600.0


@runtime_checkable
class Clock(Protocol):
    simulated: bool

    def time(self) -> float:
        """Seconds since the epoch on this clock."""

    def sleep(self, seconds: float) -> None:
        """Let `seconds` pass on this clock."""


class RealClock:
    simulated = False

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


REAL = RealClock()


class ScaledClock:
    """A simulated clock that runs `speed` times faster than real time from `origin` (its time at
    the real instant `origin_real`): every process that holds the same three numbers reads the
    same time, on any machine whose real clock agrees, so one simulated campaign can span
    processes and machines (a simulated run on Ray, `--sim-speed`)."""

    simulated = True

    def __init__(self, origin: float, speed: float, origin_real: float | None = None) -> None:
        if not speed > 0:
            raise ValueError(f"a scaled clock's speed must be positive, got {speed}")
        self.origin = float(origin)
        self.speed = float(speed)
        self.origin_real = time.time() if origin_real is None else float(origin_real)

    def time(self) -> float:
        return self.origin + (time.time() - self.origin_real) * self.speed

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds / self.speed)


class StillClock:
    """A simulated clock that moves only when slept on (a simulated run's creation, before its
    executor's clock takes over from the time it reads)."""

    simulated = True

    def __init__(self, start: float) -> None:
        self.t = float(start)

    def time(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)


_current: Clock = REAL
_lock = threading.Lock()


def current() -> Clock:
    return _current


def now() -> float:
    return _current.time()


def sleep(seconds: float) -> None:
    _current.sleep(seconds)


@contextmanager
def use_clock(clock: Clock) -> Iterator[Clock]:
    """Install `clock` as this process's clock until the block ends (not nestable with another
    simulated clock: two simulated campaigns in one process at once would share one time)."""
    global _current
    with _lock:
        if _current is not REAL and clock is not _current:
            raise RuntimeError("another simulated clock is already installed in this process")
        before, _current = _current, clock
    try:
        yield clock
    finally:
        with _lock:
            _current = before
