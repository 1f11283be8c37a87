"""The live view's figures, built off the event path.

Plotly draws each figure from the whole run (at 100k events the chart of every lineage takes
seconds), so a figure is rebuilt only when the run has grown, at most once per FIGURES_EVERY times
its last build's duration, and never on the run's own thread: that thread assembles the view the
figures are drawn from (tens of milliseconds at 100k events: a snapshot, made of records the fold
replaces and never changes), hands it to the figure thread, and takes the built figures in at a
later look. A look that carries a new node therefore never waits on a figure; the live page draws
the node at once, provisionally (`_live_page`), until the next build of the DAG lays it out.

A figure's first build (a page's first look needs every figure) is made on the run's thread."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from ._html import figure_data
from ._model import RunView
from ._report import FIGURES

__all__ = ["FIGURES_EVERY", "Drawing", "Drawn"]

FIGURES_EVERY = 10.0  # a figure is rebuilt at most once per this many times its last build's duration


@dataclass(frozen=True)
class Drawn:
    """One figure as last built: its Plotly JSON, the ledger size it shows, its build number
    (a page that holds older builds is sent it), when its build ended and how long it took."""

    data: dict[str, object]
    size: int
    version: int
    t: float
    cost: float


@dataclass(frozen=True)
class _Built:
    data: dict[str, object]
    size: int
    t: float
    cost: float


def _build(name: str, view: RunView, size: int, assembled: float) -> _Built:
    t = time.monotonic()
    data = figure_data(FIGURES[name](view))
    end = time.monotonic()
    return _Built(data, size, end, end - t + assembled)


class Drawing:
    """One run's figures as last built and the builds in flight. Every method runs on the run's
    thread; only the builds themselves run on `pool`'s thread."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self.pool = pool
        self.figures: dict[str, Drawn] = {}
        self.builds = 0  # figure builds taken in so far
        self.pending: dict[str, Future[_Built]] = {}
        self.started = 0  # builds handed to the figure thread, for the tests and the benchmark

    def take(self) -> None:
        """Take in the builds that have ended (a build's failure is raised here, on the run's thread)."""
        for name, future in list(self.pending.items()):
            if future.done():
                del self.pending[name]
                self._install(name, future.result(), first=False)

    def update(self, size: int, view: Callable[[], RunView | None]) -> None:
        """Start the builds of each figure the run grew past whose schedule allows it (cheapest
        first: the figure thread takes them in turn); build the ones never built here and now."""
        self.take()
        now = time.monotonic()
        due = [
            name
            for name in FIGURES
            if name not in self.pending
            and ((d := self.figures.get(name)) is None or (d.size != size and now - d.t >= FIGURES_EVERY * d.cost))
        ]
        if not due:
            return
        t = time.monotonic()
        snapshot = view()
        if snapshot is None:
            return
        assembled = time.monotonic() - t  # paid by each figure drawn from it
        for name in sorted(due, key=lambda n: self.figures[n].cost if n in self.figures else -1.0):
            if name not in self.figures:
                # A first build carries Plotly's and networkx's warm-up: not its cost.
                self._install(name, _build(name, snapshot, size, 0.0), first=True)
            else:
                self.pending[name] = self.pool.submit(_build, name, snapshot, size, assembled)
                self.started += 1

    def _install(self, name: str, built: _Built, *, first: bool) -> None:
        self.builds += 1
        cost = 0.0 if first else built.cost
        self.figures[name] = Drawn(built.data, built.size, self.builds, built.t, cost)
