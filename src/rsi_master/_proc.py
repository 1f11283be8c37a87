"""Child processes that die with their parent.

A SIGKILLed run must not leave an orphan behind: a slot process still writing
experiments, or an evaluator still loading a model, that a resume would start again.
On Linux the child asks the kernel for SIGKILL when its parent goes
(`PR_SET_PDEATHSIG`); elsewhere nothing is armed and the parent's own cleanup is all
there is.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

__all__ = ["die_with_parent", "run_tied", "tied_process_pool"]

_PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except OSError:
        return None


def _arm(prctl: Callable[..., int] | None, parent: int) -> None:
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def die_with_parent(parent: int) -> None:
    """Arm SIGKILL on the parent's death; exit at once if `parent` is already gone."""
    _arm(_prctl(), parent)


def run_tied(cmd: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """`subprocess.run` whose child is killed when this process dies.

    The death signal is armed between fork and exec, with `prctl` looked up here (no
    library loading in the child): one call and a `getppid`, safe in a threaded parent.
    """
    prctl = _prctl()
    if prctl is None:
        return subprocess.run(cmd, **kwargs)
    return subprocess.run(cmd, preexec_fn=functools.partial(_arm, prctl, os.getpid()), **kwargs)


def tied_process_pool(workers: int) -> ProcessPoolExecutor:
    """A `ProcessPoolExecutor` of `workers` spawned processes that die with this one (killed or
    not): an orphaned worker would go on with its job beside a restarted parent."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        max_workers=workers, mp_context=mp.get_context("spawn"), initializer=die_with_parent, initargs=(os.getpid(),)
    )
