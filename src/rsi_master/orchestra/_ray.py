"""The Ray executor: each Worker or Reviewer node as one Ray task on a cluster, on real time, or
for a simulated run on a scaled clock (`--sim-speed`) that the driver and every task share.

The scheduler sees the same handles as from the local pool (`exitcode`, `terminate`, `kill`,
`join`). A task asks Ray for its slot's resources (`cpus_per_slot` CPUs, `gpus_per_slot` GPUs:
Ray sets the task's `CUDA_VISIBLE_DEVICES`, so the driver assigns no devices itself) and is
never retried by Ray: a node that died with its task or its machine is recorded by the
scheduler as a failed job, and the Main decides what to do, as for a crashed slot process.
Tasks belong to the driver's Ray job, so a killed driver takes them with it (as a slot process
dies with its scheduler) and `resume` starts from the ledger alone.

A task opens the run as a slot process does, but without the key directory: it is handed its
capability and a proxy to the run's `KeyKeeper`, one Ray actor pinned to the driver's node, which
signs the task's own events, keeps the witness, checks capabilities and hands the seal key
(`_keeper`; docs/scale-out.md says which guarantee holds where). For a run in PostgreSQL with
its artifacts on a URL, the task is also handed the run directory's public small files and the
driver's store and ledger settings, so that a machine without the run directory opens the run
from a copy of its own (`_shipped`). `terminate` is Ray's soft
cancel, which interrupts the task's main thread: the node gets `BudgetEnd` there and records its
finalize, as on SIGTERM.
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
from ._keeper import DriverKeys, KeyKeeper
from ._launch import NodeLaunch
from ._shipped import Shipped, drop_local_copy, local_run_dir, ship, shipped_env
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
            # "local": a new instance even where another cluster runs on this machine (ray.init() would join it).
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=True)
        else:
            ray.init(address=address, log_to_driver=True)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RsiMasterError(f"cannot join the Ray cluster at {address or 'a new local one'}: {first}") from None
    return True


def keeper_call(ray: Any, keeper: Any) -> Any:
    """`DriverKeys`' call into the keeper actor: the keeper's own refusal raised as itself."""

    def call(method: str, *args: Any) -> Any:
        try:
            return ray.get(getattr(keeper, method).remote(*args))
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, RsiMasterError):
                raise exc.cause from None
            raise

    return call


def ray_node(
    launch: NodeLaunch, clock: _clock.ScaledClock | None = None, keeper: Any = None, shipped: Shipped | None = None
) -> int:
    """The body of a node's Ray task: open the run with the driver's keeper (the task holds no
    key), at `launch.run_dir` or, on a machine without it, at a run directory of its own made of
    the driver's `shipped` files (`_shipped`), with the driver's store and ledger settings; run
    the node on the driver's clock (real, or the scaled one of a simulated run), return 0 (an
    exception is the task's failure)."""
    if launch.key_dir is not None or keeper is None:
        raise RsiMasterError("a Ray task gets the driver's keeper, never the key directory")
    keys = DriverKeys(keeper_call(_ray(), keeper), launch.capability)

    before = stop_on(signal.SIGINT)  # Ray's cancel; once: a second one ends the task
    try:
        with (
            _clock.use_clock(clock or _clock.REAL),
            shipped_env(shipped),
            ExpOS.open(local_run_dir(launch.run_dir, shipped), key_dir=keys, gate_process=True) as opened,
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
        # Ray's runtime environment of every task (e.g. env_vars), beside the cluster's.
        self.runtime_env: dict[str, Any] | None = None
        self._task = self._ray.remote(ray_node)
        self._keeper: Any = None
        self._keeper_of: str | None = None
        self._shipped: Shipped | None = None

    def keeper(self, run_dir: str, key_dir: str | None) -> Any:
        """The run's keeper actor, started on first use in a process of the driver's node, and
        again if it died (the jobs that were using it failed; the next ones get a new one)."""
        if self._keeper_of == run_dir:
            try:
                self._ray.get(self._keeper.__ray_ready__.remote())
            except self._ray.exceptions.RayActorError as exc:
                print(
                    f"the run's keeper was lost ({type(exc).__name__}); starting another", file=sys.stderr, flush=True
                )
                self._keeper_of = None
        if self._keeper_of != run_dir:
            self._stop_keeper()
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            here = self._ray.get_runtime_context().get_node_id()
            actor = self._ray.remote(KeyKeeper).options(
                num_cpus=0,
                max_restarts=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
            )
            # The actor's environment is its raylet's, not this process's: the key directory goes by path.
            path = str(KeyDir(key_dir).path.absolute())
            clock = self.clock if isinstance(self.clock, _clock.ScaledClock) else None
            env = dict(self._shipped.env) if self._shipped is not None else None
            self._keeper = actor.remote(run_dir, path, clock, env)
            self._ray.get(self._keeper.__ray_ready__.remote())  # a keeper that cannot open the run fails here
            self._keeper_of = run_dir
        return self._keeper

    def _stop_keeper(self) -> None:
        if self._keeper is not None:
            try:
                self._ray.get(self._keeper.close.remote(), timeout=60)
            except Exception as exc:  # the run is in the ledger; a keeper that cannot close is reported, not fatal
                print(f"the run's keeper did not close: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            self._ray.kill(self._keeper)
            self._keeper, self._keeper_of = None, None

    def start(self, launch: NodeLaunch) -> _RayHandle:
        run_dir = str(os.path.abspath(launch.run_dir))
        if self._shipped is None or self._shipped.run_dir != run_dir:
            self._shipped = ship(run_dir)  # for a machine without the run directory, and the keeper
        keeper = self.keeper(run_dir, launch.key_dir)
        launch = dataclasses.replace(launch, run_dir=run_dir, key_dir=None)  # the task holds no key
        ref = self._task.options(
            num_cpus=self.cpus_per_slot,
            num_gpus=self.gpus_per_slot,
            resources=dict(self.resources),
            max_retries=0,  # the scheduler, not Ray, decides whether a node runs again
            retry_exceptions=False,
            name=f"rsi-{launch.node}",
            **({"runtime_env": self.runtime_env} if self.runtime_env else {}),
        ).remote(launch, self.clock if isinstance(self.clock, _clock.ScaledClock) else None, keeper, self._shipped)
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

    def _drop_copies(self) -> None:
        """Remove the copies of the run that tasks made on machines without its run directory
        (`_shipped.local_run_dir`): one task on each live node. A node that cannot be reached
        keeps its copy (said on stderr); a killed driver leaves them until a resumed run ends."""
        shipped = self._shipped
        if shipped is None or not shipped.files:
            return  # tasks ran from the run directory itself: there is no copy
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        task = self._ray.remote(drop_local_copy)
        refs = [
            task.options(
                num_cpus=0,
                max_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=n["NodeID"], soft=False),
            ).remote(shipped.run_id)
            for n in self._ray.nodes()
            if n.get("Alive")
        ]
        try:
            self._ray.get(refs, timeout=120)
        except Exception as exc:  # the run is complete in the ledger; a copy left behind is only disk
            print(f"could not remove every node's copy of the run: {type(exc).__name__}: {exc}", file=sys.stderr)

    def close(self) -> None:
        """Close the run's keeper, remove the run's copies on the nodes, and leave the cluster if
        this executor joined it (a private local one is shut down)."""
        if self._ray.is_initialized():
            self._stop_keeper()
            self._drop_copies()
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()
