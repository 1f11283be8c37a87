"""The driver of a campaign: the executor the run's nodes run on, the run's clock, the scheduler
from start (or resume) to the harness's close."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _clock
from ..errors import RsiMasterError
from ..rundir import DRIVER_LOCK
from ._display import Display
from ._executor import make_executor
from ._graph import load_graph, parse_ts
from ._scheduler import Scheduler
from ._summary import close_run

if TYPE_CHECKING:
    from ..expos import ExpOS

__all__ = ["drive", "one_driver"]


def drive(
    expos: ExpOS,
    display: Display,
    key_dir: str | None,
    *,
    resume: bool,
    executor: str | None,
    ray_address: str | None,
    sim_speed: float | None = None,
) -> dict[str, Any]:
    # The run's backend names where its nodes run and on which clock (a simulated one continues
    # from the run's last event) unless the operator names another; every record from here on is on that clock.
    last = expos.run.ledger.get(expos.run.ledger.size() - 1).ts
    settings = load_graph(expos.reader).settings
    gpus = float(settings.gpus_per_slot or 0) if settings is not None else 0.0
    options: dict[str, Any] = {}
    if executor == "ray":
        options = {"address": ray_address, "gpus_per_slot": gpus, "sim_speed": sim_speed}
    with one_driver(expos.run.path):
        ex = make_executor(executor or expos.backend.executor, start=parse_ts(last), **options)
        try:
            with _clock.use_clock(ex.clock):
                return _drive_on(expos, display, key_dir, resume=resume, executor=ex)
        finally:
            ex.close()


@contextlib.contextmanager
def one_driver(run_dir: str | Path) -> Iterator[None]:
    """Hold the run's driver lock while driving it. Two drivers of one run (a `resume` while the
    run is still driven, from another terminal, or a bench restarted while its old campaign
    processes live on) would each launch the same nodes and answer the same events: the second is
    refused before it records anything. The lock is the kernel's (`flock`), so a killed driver
    holds it no more; the descriptor is not inherited by the slot processes (spawned)."""
    path = Path(run_dir) / DRIVER_LOCK
    try:
        # Never through a link: whoever could plant one would have the driver truncate its target.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise RsiMasterError(f"{path}: cannot take the run's driver lock ({exc.strerror})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise RsiMasterError(
                f"{run_dir} is being driven by another process (pid {holder}); "
                "wait for it to end, or stop it, before resuming"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _drive_on(expos: ExpOS, display: Display, key_dir: str | None, *, resume: bool, executor: Any) -> dict[str, Any]:

    sched = Scheduler(expos, display, key_dir=key_dir, executor=executor)
    try:
        if resume:
            sched.resume()
        else:
            sched.start()
        reason = sched.drive()
        graph = load_graph(expos.reader)
        if not any(
            d.action == "stop" and d.seq > (graph.stopped.seq if graph.stopped is not None else -1)
            for d in graph.decisions
        ):
            sched.main.finish(sched.main_ctx(), graph, reason)
        display.line("harness: selecting on review, scoring once on final")
        return close_run(expos, sched)
    finally:
        display.close()
