"""The Ray executor: each Worker or Reviewer node as one Ray task on a cluster, on real time, or
for a simulated run on a scaled clock (`--sim-speed`) that the driver and every task share.

The scheduler sees the same handles as from the local pool (`exitcode`, `terminate`, `kill`,
`join`). A task asks Ray for its slot's resources (`cpus_per_slot` CPUs, `gpus_per_slot` GPUs:
Ray sets the task's `CUDA_VISIBLE_DEVICES`, so the driver assigns no devices itself) and is
never retried by Ray: a node that died with its task or its machine is recorded by the
scheduler as a failed job, and the Main decides what to do, as for a crashed slot process.
Tasks belong to the driver's Ray job, so a killed driver takes them with it (as a slot process
dies with its scheduler) and `resume` starts from the ledger alone.

A task opens the run as a slot process does (docs/scale-out.md says what that asks of the
machines it runs on); `terminate` is Ray's soft cancel, which interrupts the task's main
thread: the node gets `BudgetEnd` there and records its finalize, as on SIGTERM.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
from typing import Any

from .. import _clock
from ..errors import RsiMasterError
from ..expos import ExpOS
from ..ledger import KeyDir
from ._job import run_node
from ._launch import NodeLaunch
from ._stop import stop_on

__all__ = ["RAY_QUIET_ENV", "RayExecutor", "connect", "ray_node"]

# A driver started by `rsi-master` reports nothing to Ray's usage statistics and serves no dashboard.
RAY_QUIET_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_DISABLE_DOCKER_CPU_WARNING": "1"}


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RsiMasterError("--executor ray needs Ray: pip install 'rsi-master[scale]'") from None
    return ray


def connect(address: str | None, *, num_cpus: int | None = None) -> bool:
    """Join the Ray cluster at `address` (`auto`, `ray://HOST:PORT`, `HOST:PORT`), or start a
    private one on this machine for None; returns whether this call connected (False: this
    process was connected already, and whoever connected it shuts it down)."""
    ray = _ray()
    if ray.is_initialized():
        return False
    for key, value in RAY_QUIET_ENV.items():
        os.environ.setdefault(key, value)
    try:
        if address is None:
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=True)
        else:
            ray.init(address=address, log_to_driver=True)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RsiMasterError(f"cannot join the Ray cluster at {address or 'a new local one'}: {first}") from None
    return True


def ray_node(launch: NodeLaunch, clock: _clock.ScaledClock | None = None) -> int:
    """The body of a node's Ray task: open the run, run the node on the driver's clock (real, or
    the scaled one of a simulated run), return 0 (an exception is the task's failure)."""

    before = stop_on(signal.SIGINT)  # Ray's cancel; once: a second one ends the task
    try:
        with (
            _clock.use_clock(clock or _clock.REAL),
            ExpOS.open(launch.run_dir, key_dir=launch.key_dir) as opened,
        ):
            run_node(opened, launch.kind, launch.node, launch.deadline, launch.seed, launch.reviewer, launch.capability)
    finally:
        signal.signal(signal.SIGINT, before)
    return 0


class _RayHandle:
    def __init__(self, ray: Any, ref: Any, node: str) -> None:
        self._ray = ray
        self.ref = ref
        self.node = node
        self.exitcode: int | None = None
        self.error: str | None = None  # why the task failed, as Ray says it

    def settle(self) -> None:
        """Read the finished task's outcome into `exitcode` (0, or 1 with `error`)."""
        if self.exitcode is not None:
            return
        try:
            self.exitcode = int(self._ray.get(self.ref))
        except Exception as exc:  # any task failure (raised, cancelled, worker or node lost) is the job's failure
            self.exitcode = 1
            self.error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
            print(f"node {self.node} failed on Ray: {self.error}", file=sys.stderr, flush=True)

    def terminate(self) -> None:
        self._ray.cancel(self.ref, force=False)

    def kill(self) -> None:
        self._ray.cancel(self.ref, force=True)

    def join(self) -> None:
        self._ray.wait([self.ref], num_returns=1, timeout=None)
        self.settle()


class RayExecutor:
    """Each node as a Ray task (`ray_node`) with its slot's resources, on the real clock; with
    `sim_speed`, on a `ScaledClock` from `start` (a simulated run's time, `sim_speed` simulated
    seconds per real second, read alike by the driver and every task)."""

    clock: _clock.Clock = _clock.REAL
    # Ray places a task on a machine with the GPUs it asks for and sets its CUDA_VISIBLE_DEVICES.
    places_gpus = True

    def __init__(
        self,
        start: float | None = None,
        *,
        address: str | None = None,
        cpus_per_slot: float = 1.0,
        gpus_per_slot: float = 0.0,
        local_cpus: int | None = None,
        sim_speed: float | None = None,
    ) -> None:
        self._ray = _ray()
        self._owns = connect(address, num_cpus=local_cpus)
        if sim_speed is not None:  # from here: joining the cluster took real time, not simulated time
            self.clock = _clock.ScaledClock(_clock.REAL.time() if start is None else start, sim_speed)
        self.cpus_per_slot = cpus_per_slot
        self.gpus_per_slot = gpus_per_slot
        # Custom Ray resources each task asks for as well (a label the operator gave some machines).
        self.resources: dict[str, float] = {}
        self._task = self._ray.remote(ray_node)

    def start(self, launch: NodeLaunch) -> _RayHandle:
        # A Ray worker's environment is its raylet's, not this process's: the key directory goes by path.
        launch = dataclasses.replace(launch, key_dir=str(KeyDir(launch.key_dir).path.absolute()))
        ref = self._task.options(
            num_cpus=self.cpus_per_slot,
            num_gpus=self.gpus_per_slot,
            resources=dict(self.resources),
            max_retries=0,  # the scheduler, not Ray, decides whether a node runs again
            retry_exceptions=False,
            name=f"rsi-{launch.node}",
        ).remote(launch, self.clock if isinstance(self.clock, _clock.ScaledClock) else None)
        return _RayHandle(self._ray, ref, launch.node)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """The handles whose task ended, waiting up to `timeout` seconds for one."""
        if not handles:
            time.sleep(max(0.0, timeout))
            return []
        done, _ = self._ray.wait([h.ref for h in handles], num_returns=1, timeout=max(0.0, timeout))
        ready = set(done)
        ended = [h for h in handles if h.ref in ready]
        for h in ended:
            h.settle()
        return ended

    def poll_timeout(self, poll_s: float, until: float) -> float:
        return poll_s

    def close(self) -> None:
        """Leave the cluster if this executor joined it (a private local one is shut down)."""
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()
