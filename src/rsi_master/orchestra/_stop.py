"""How a node takes the scheduler's stop (SIGTERM in a slot process, Ray's cancel in a Ray task):
`BudgetEnd` is raised in the main thread, so the agent records its finalize with what it has.

Never inside an import: libraries wrap whatever an import raises (transformers' lazy modules turn
it into a `RuntimeError`), and a module cut off half-way is gone from `sys.modules`, so a stop
that landed in `import torch` would read as a training failure. A stop that arrives while any
frame is importing is held, re-checked every 50 ms, and raised once the import has finished;
a second signal still takes the default action at once (the scheduler's kill)."""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any

from ._protocols import BudgetEnd

__all__ = ["stop_on"]

RECHECK_S = 0.05
MESSAGE = "the scheduler asked this node to stop"


def _importing(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _raise_unless_importing(frame: FrameType | None) -> None:
    if _importing(frame):
        signal.signal(signal.SIGALRM, _held)
        signal.setitimer(signal.ITIMER_REAL, RECHECK_S)
        return
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    raise BudgetEnd(MESSAGE)


def _held(signum: int, frame: FrameType | None) -> None:
    _raise_unless_importing(frame)


def stop_on(signum: int) -> Any:
    """Install the stop handler for `signum` (call from the main thread); returns the handler
    it replaced. The first signal raises `BudgetEnd` (held past an import); a second one takes
    the default action."""

    def _stop(sig: int, frame: FrameType | None) -> None:
        signal.signal(signum, signal.SIG_DFL)  # once: a second one ends the process
        _raise_unless_importing(frame)

    return signal.signal(signum, _stop)
