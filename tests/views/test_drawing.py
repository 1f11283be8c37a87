"""The live view's figures are built off the event path: a figure build in flight never delays the
delta that carries a new node."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

pytest.importorskip("starlette", reason="the live view needs the serve extra (starlette, uvicorn)")

from starlette.testclient import TestClient

from rsi_master.views._model import RunView
from rsi_master.views._report import FIGURES
from rsi_master.views.live import LiveRuns, make_app

from .conftest import add_worker

HOLD_S = 20.0  # a held build waits at most this long for the test to let it go


class Held:
    """A figure's builder that, once armed, blocks each build until released."""

    def __init__(self, real: Callable[[RunView], object]) -> None:
        self.real = real
        self.armed = False
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, view: RunView) -> object:
        if self.armed:
            self.started.set()
            if not self.release.wait(HOLD_S):
                raise TimeoutError("the test never released the build")
        return self.real(view)


def test_a_figure_build_in_flight_never_delays_the_delta_that_carries_a_new_node(growing, monkeypatch):
    held = Held(FIGURES["lineages"])
    monkeypatch.setitem(FIGURES, "lineages", held)
    runs = LiveRuns(growing.runs, str(growing.key_dir))
    try:
        client = TestClient(make_app(runs, token=None, loopback=True), base_url="http://127.0.0.1:8765")
        page = client.get("/run/live/data.json").json()  # the first look builds every figure, here
        live = runs.runs["live"]
        assert set(live.drawing.figures) == set(FIGURES) and not live.drawing.pending
        held.armed = True
        add_worker(growing.expos, "w2", ["w1"])
        page = client.get(f"/run/live/data.json?since={page['size']}&figs={page['figs']}").json()
        assert held.started.wait(10)  # the lineage chart's rebuild began on the figure thread, and is held
        add_worker(growing.expos, "w3", ["w2"])
        d = client.get(f"/run/live/data.json?since={page['size']}&figs={page['figs']}").json()
        # The new node came while the build is still held: the look did not wait on it.
        assert not held.release.is_set() and "lineages" in live.drawing.pending
        assert [n["id"] for n in d["nodes"]] == ["w3"] and d["size"] == page["size"] + 1
        assert not (d["figures"] or {}).get("lineages")
        held.release.set()
        live.drawing.pending["lineages"].result(HOLD_S)
        # The next look takes the built chart in, and a page that held the older one is sent it.
        after = client.get(f"/run/live/data.json?since={d['size']}&figs={d['figs']}").json()
        assert "lineages" in after["figures"] and after["figs"] != d["figs"]
        assert live.drawing.figures["lineages"].size == page["size"]  # drawn from the view as it stood
    finally:
        held.release.set()
        runs.close()
