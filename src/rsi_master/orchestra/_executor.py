"""Executors: where the scheduler's Worker and Reviewer nodes run, and on which clock.

`process` (real backend): each node in a spawned slot process, on real time. `inline`
(simulated backend): each node in a thread of this process, under a conductor that lets exactly
one thread run at a time and, when every thread waits, moves the simulated clock to the
earliest wake-up (as Syne Tune's simulator backend does for asynchronous schedulers). Nodes
spend simulated time only where the backend says an action takes time (training, evaluation),
so ten simulated hours take as long as the work the nodes do, and a run is deterministic: which
thread runs next depends only on simulated time and the order of events.

The experiment backend names its executor (`ExpOS.backend.executor`); the scheduler looks it up
here and otherwise does not know which one it has.
"""

from __future__ import annotations

import heapq
import multiprocessing as mp
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import wait as mp_wait
from typing import Any

from .. import _clock
from ..errors import RsiMasterError
from ..expos import ExpOS, SharedProjections
from ._job import job_main, run_node
from ._launch import NodeLaunch
from ._protocols import BudgetEnd

__all__ = [
    "EXECUTORS",
    "Conductor",
    "InlineExecutor",
    "NodeLaunch",
    "ProcessExecutor",
    "check_executor",
    "make_executor",
]


class _ProcHandle:
    def __init__(self, proc: Any) -> None:
        self.proc = proc

    @property
    def exitcode(self) -> int | None:
        return self.proc.exitcode

    def terminate(self) -> None:
        self.proc.terminate()

    def kill(self) -> None:
        self.proc.kill()

    def join(self) -> None:
        self.proc.join()


class ProcessExecutor:
    """Each node in a spawned slot process (the capability goes through the spawn pipe)."""

    clock: _clock.Clock = _clock.REAL

    def __init__(self, start: float | None = None) -> None:
        self.ctx = mp.get_context("spawn")

    def start(self, launch: NodeLaunch) -> _ProcHandle:

        a = launch
        proc = self.ctx.Process(
            target=job_main,
            name=f"rsi-{a.node}",
            args=(
                a.run_dir,
                a.key_dir,
                a.kind,
                a.node,
                a.deadline,
                a.seed,
                a.reviewer,
                a.parent_pid,
                a.slots,
                a.capability,
            ),
        )
        proc.start()
        return _ProcHandle(proc)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """The handles whose node ended, waiting up to `timeout` seconds for one."""
        if not handles:
            time.sleep(max(0.0, timeout))
            return []
        ready = mp_wait([h.proc.sentinel for h in handles], timeout=timeout)
        return [h for h in handles if h.proc.sentinel in ready]

    def poll_timeout(self, poll_s: float, until: float) -> float:
        return poll_s  # real time: look again shortly (agents outside the pool act too)

    def close(self) -> None:
        """Nothing to release: each slot process ends with its node."""


class Conductor:
    """A simulated clock shared by cooperating threads: one runs, the others wait for a
    simulated time or to be woken; time moves only when every thread waits."""

    simulated = True

    def __init__(self, start: float) -> None:
        self.t = float(start)
        # One lock, and a condition per thread on it: a turn wakes only the thread it goes to
        # (a shared condition's notify_all woke every waiting node to find it was not theirs).
        self._lock = threading.RLock()
        self._turns: dict[threading.Thread, threading.Condition] = {}
        self._holder: threading.Thread | None = threading.current_thread()
        self._ready: deque[threading.Thread] = deque()
        self._timers: list[tuple[float, int, threading.Thread]] = []
        self._timer_of: dict[threading.Thread, int] = {}
        self._seq = 0
        self._stopping: set[threading.Thread] = set()

    def time(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        me = threading.current_thread()
        with self._lock:
            self._check_held(me)
            if me not in self._stopping:
                self._timer(me, self.t + max(0.0, seconds))
                self._hand_over(me)
            if me in self._stopping:
                # Once per request, as SIGTERM is once in a slot process: the node may still record
                # its finalize (door calls take simulated time); a second request (kill) stops it again.
                self._stopping.discard(me)
                raise BudgetEnd("the scheduler asked this node to stop")

    # -- used by the executor ---------------------------------------------------------------
    def spawn(self, target: Callable[[], None], name: str, on_end: Callable[[threading.Thread], None]) -> Any:
        """A new thread that runs `target` when the conductor gives it its turn (after the
        caller next waits), then calls `on_end` (holding the conductor)."""

        def body() -> None:
            me = threading.current_thread()
            with self._lock:
                self._await_turn(me)
            try:
                target()
            finally:
                with self._lock:
                    self._turns.pop(me, None)
                    self._timer_of.pop(me, None)
                    self._stopping.discard(me)
                    on_end(me)
                    self._next()

        th = threading.Thread(target=body, name=name, daemon=True)
        with self._lock:
            self._ready.append(th)
        th.start()
        return th

    def wake(self, th: threading.Thread) -> None:
        """Make a waiting thread runnable now (its timer, if any, is dropped). Holding the lock."""
        if self._timer_of.pop(th, None) is not None:
            self._ready.append(th)

    def stop(self, th: threading.Thread) -> None:
        """Ask a node thread to stop: it gets BudgetEnd from its next (or current) wait."""
        with self._lock:
            self._stopping.add(th)
            self.wake(th)

    def wait_for(self, done: Callable[[], bool], timeout: float) -> None:
        """Wait (as the running thread) until `done()` or `timeout` simulated seconds; a node's
        end wakes the waiter through `wake`."""
        me = threading.current_thread()
        with self._lock:
            self._check_held(me)
            if done():
                return
            self._timer(me, self.t + max(0.0, timeout))
            self._hand_over(me)

    # -- the baton --------------------------------------------------------------------------
    def _check_held(self, me: threading.Thread) -> None:
        if self._holder is not me:
            raise RuntimeError(f"thread {me.name} acted on the simulated clock without its turn")

    def _timer(self, th: threading.Thread, at: float) -> None:
        self._seq += 1
        self._timer_of[th] = self._seq
        heapq.heappush(self._timers, (at, self._seq, th))

    def _hand_over(self, me: threading.Thread) -> None:
        self._next()
        self._await_turn(me)

    def _await_turn(self, me: threading.Thread) -> None:
        turn = self._turns.get(me)
        if turn is None:
            turn = self._turns[me] = threading.Condition(self._lock)
        try:
            while self._holder is not me:
                turn.wait()
        except KeyboardInterrupt:
            # Ctrl-C reaches the main thread (the scheduler's) while a node runs: it takes the
            # next turn before the interrupt goes on, so that stopping the nodes on its way out
            # runs on the clock like everything else (without the turn it would fail there, and
            # the traceback would hide the interrupt). A second Ctrl-C leaves at once.
            self._timer_of.pop(me, None)
            if self._holder is None:
                self._holder = me
            if self._holder is not me:
                if me in self._ready:
                    self._ready.remove(me)
                self._ready.appendleft(me)
                while self._holder is not me:
                    turn.wait()
            raise

    def _next(self) -> None:
        """Give the turn to the next ready thread, else advance time to the earliest timer."""
        nxt: threading.Thread | None = None
        if self._ready:
            nxt = self._ready.popleft()
        while nxt is None and self._timers:
            at, seq, th = heapq.heappop(self._timers)
            if self._timer_of.get(th) != seq:
                continue  # dropped by a wake
            del self._timer_of[th]
            self.t = max(self.t, at)
            nxt = th
        self._holder = nxt
        turn = self._turns.get(nxt) if nxt is not None else None
        if turn is not None:  # a thread with no condition yet checks its turn before it waits
            turn.notify()


class _ThreadHandle:
    def __init__(self, executor: InlineExecutor, launch: NodeLaunch) -> None:
        self.executor = executor
        self.launch = launch
        self.exitcode: int | None = None
        self.thread: Any = None

    def terminate(self) -> None:
        self.executor.clock.stop(self.thread)

    kill = terminate  # a thread cannot be killed; a stopped node ends at its next wait

    def join(self) -> None:
        while self.exitcode is None:
            self.executor.wait([self], 3600.0)


class InlineExecutor:
    """Each node in a thread of this process under a `Conductor` (the simulated clock)."""

    def __init__(self, start: float | None = None) -> None:
        self.clock = Conductor(_clock.SIM_EPOCH if start is None else start)
        self._waiter: threading.Thread | None = None
        # The nodes take turns, so their sessions share one fold of the ledger: a node starts
        # from the events the nodes before it folded, not from the ledger's first.
        self.projections = SharedProjections()

    def start(self, launch: NodeLaunch) -> _ThreadHandle:
        handle = _ThreadHandle(self, launch)

        def target() -> None:
            try:
                _run_inline(launch, self.projections)
                handle.exitcode = 0
            except BaseException:  # a crashed node is reported like a crashed slot process
                print(f"node {launch.node} failed:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
                handle.exitcode = 1

        def on_end(th: threading.Thread) -> None:
            if handle.exitcode is None:
                handle.exitcode = 1
            if self._waiter is not None:
                self.clock.wake(self._waiter)

        handle.thread = self.clock.spawn(target, f"rsi-{launch.node}", on_end)
        return handle

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        def done() -> bool:
            return any(h.exitcode is not None for h in handles)

        self._waiter = threading.current_thread()
        try:
            self.clock.wait_for(done, timeout)
        finally:
            self._waiter = None
        return [h for h in handles if h.exitcode is not None]

    def poll_timeout(self, poll_s: float, until: float) -> float:
        # Nothing outside this process acts: wait for a node to end, or for the budget's end.
        return max(until - self.clock.time(), 1e-3)

    def close(self) -> None:
        """Nothing to release: each node's thread ends with its node."""


def _run_inline(launch: NodeLaunch, projections: SharedProjections) -> None:

    with ExpOS.open(launch.run_dir, key_dir=launch.key_dir, projections=projections) as opened:
        run_node(opened, launch.kind, launch.node, launch.deadline, launch.seed, launch.reviewer, launch.capability)


def _ray_executor(start: float | None = None, **options: Any) -> Any:
    from ._ray import RayExecutor  # Ray is imported only by a run that asks for it

    return RayExecutor(start, **options)


EXECUTORS: dict[str, Callable[..., Any]] = {
    "process": ProcessExecutor,
    "inline": InlineExecutor,
    "ray": _ray_executor,
}


def check_executor(name: str | None, ray_address: str | None, sim_speed: float | None = None) -> None:
    """Refuse an unknown executor, or a Ray address or simulated speed for another executor, or a
    speed that is not positive (before anything is written)."""
    if name is not None and name not in EXECUTORS:
        raise RsiMasterError(f"unknown executor {name!r}; known: {', '.join(EXECUTORS)}")
    if ray_address is not None and name != "ray":
        raise RsiMasterError("--ray-address is for --executor ray")
    if sim_speed is not None and name != "ray":
        raise RsiMasterError("--sim-speed is for a simulated run on --executor ray")
    if sim_speed is not None and not sim_speed > 0:
        raise RsiMasterError(f"--sim-speed must be a positive number of simulated seconds per second, got {sim_speed}")


def make_executor(name: str, start: float | None = None, **options: Any) -> Any:
    """The executor `name` (`EXECUTORS`); `options` are the Ray executor's (address, slot resources)."""
    if name not in EXECUTORS:
        raise RsiMasterError(f"unknown executor {name!r}; known: {', '.join(EXECUTORS)}")
    return EXECUTORS[name](start, **options)
