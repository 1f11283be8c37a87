"""The live view's figures are built off the event path: a figure build in flight never delays the
delta that carries a new node, and the page draws that node in the DAG at once, provisionally,
until the DAG's next build lays it out."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

pytest.importorskip("starlette", reason="the live view needs the serve extra (starlette, uvicorn)")

from starlette.testclient import TestClient

from rsi_master.events import ReviewRequest
from rsi_master.views._model import RunView
from rsi_master.views._report import FIGURES
from rsi_master.views.live import LiveRuns, make_app

from .conftest import AUTH, TOKEN
from .test_live import MAIN, Server, add_worker, load_url, wait_points

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
        client = TestClient(make_app(runs, token=TOKEN, loopback=True), base_url="http://127.0.0.1:8765", headers=AUTH)
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


@pytest.mark.heavy
def test_the_live_page_draws_a_new_node_at_once_until_the_dags_next_layout(growing, browser, monkeypatch):
    held = Held(FIGURES["dag"])
    monkeypatch.setitem(FIGURES, "dag", held)
    server = Server(growing)
    try:
        loaded = load_url(browser, server.url + "run/live/")
        page = loaded.page
        held.armed = True  # from now on the DAG's builds wait: only the page can draw a new node
        add_worker(growing.expos, "w2", ["w1"])
        growing.expos.record(MAIN, ReviewRequest(reviewer_id="r1", question="is w2 <b>sound</b>?", scope=["w2"]))
        assert wait_points(page, 3, 5.0) < 5.0
        assert held.started.is_set() and not held.release.is_set()
        drawn = page.evaluate(
            """() => Object.fromEntries(document.getElementById('dag').data.map(t => [t.name,
                 {ids: t.customdata, x: t.x, y: t.y, hover: t.hovertext}]))"""
        )
        assert drawn["workers"]["ids"] == ["w1", "w2"] and drawn["reviewers"]["ids"] == ["r1"]
        # One layer after the node each links from, with its edge: w1 -> w2 (context), w2 -> r1 (scope).
        w1, w2 = ((drawn["workers"]["x"][i], drawn["workers"]["y"][i]) for i in (0, 1))
        r1 = (drawn["reviewers"]["x"][0], drawn["reviewers"]["y"][0])
        assert w1[0] < w2[0] < r1[0]
        assert drawn["context (Worker → Worker)"]["x"][-3:-1] == [w1[0], w2[0]]
        assert drawn["review scope"]["x"][-3:-1] == [w2[0], r1[0]]
        assert "placed until the next layout" in drawn["reviewers"]["hover"][0]
        assert "is w2 &lt;b&gt;sound&lt;/b&gt;?" in drawn["reviewers"]["hover"][0]  # model output: escaped
        page.select_option("#node-select", "r1")
        assert "Scope: w2" in page.locator("#panel").inner_text()
        held.release.set()  # the DAG's next build lays every node out and replaces the provisional ones
        page.wait_for_function(
            """() => { const d = document.getElementById('dag').data;
                 return d.every(t => !(t.hovertext || []).some(h => h && h.includes('placed until'))); }""",
            timeout=10_000,
        )
        assert page.locator("#dag .scatterlayer .trace .points path.point").count() == 3
        assert loaded.errors == [] and all(u.startswith(server.url) for u in loaded.requests)
        page.close()
    finally:
        held.release.set()
        server.stop()


@pytest.mark.heavy
def test_the_live_page_redraws_a_figure_off_screen_only_once_it_scrolls_into_view(growing, browser):
    server = Server(growing)
    try:
        loaded = load_url(browser, server.url + "run/live/")
        page = loaded.page
        page.set_viewport_size({"width": 1400, "height": 400})  # the charts under the DAG are off screen
        page.evaluate(
            "() => { window.drawn = []; const g = drawFigures; drawFigures = F => { drawn.push(...Object.keys(F)); g(F); }; }"
        )
        live = server.runs.runs["live"]
        builds = live.drawing.builds
        add_worker(growing.expos, "w2", ["w1"])
        page.wait_for_function("() => drawn.includes('dag')", timeout=10_000)
        # Every figure rebuilt since has reached the page (the stream says so at its next look).
        deadline = time.monotonic() + 10
        while (live.drawing.pending or live.drawing.builds < builds + len(FIGURES)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert live.drawing.builds == builds + len(FIGURES)
        time.sleep(2.0)
        assert "lineages" not in page.evaluate("() => drawn")
        page.locator("#lineages").scroll_into_view_if_needed()
        page.wait_for_function("() => drawn.includes('lineages')", timeout=5_000)
        assert loaded.errors == []
        page.close()
    finally:
        server.stop()
