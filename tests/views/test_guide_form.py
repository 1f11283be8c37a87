"""The live page's guidance form in headless Chromium, on a simulated campaign running in this
process: each submission appends exactly one `human.guidance` event, the Main's next decision
cites it, and a pause holds new launches until the resume."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the live view needs the serve extra (starlette, uvicorn)")

from rsi_master.expos import ExpOS
from rsi_master.orchestra import PlainDisplay, PolicyMain, RunSpec, agent_names, load_graph, start_run
from rsi_master.orchestra._registry import MAINS
from rsi_master.sim import generate_world

from .test_live import Served, Server, load_url

# What the Main below hands its guidance to: the test's browser, filling in the live page's form.
FORM: dict[str, Callable[..., None]] = {}
SEEN: dict[str, object] = {}


class FormGuidedMain(PolicyMain):
    """The policy Main, with a person at the live page between its decisions: after its first
    event they pause launches, prefer a direction no Worker has and say why; after its second,
    they resume."""

    asked = 0

    def on_event(self, ctx, graph, event):
        FormGuidedMain.asked += 1
        super().on_event(ctx, graph, event)
        SEEN["size"] = ctx.expos.run.ledger.size()
        if FormGuidedMain.asked == 1:
            graph = load_graph(ctx.expos.reader)  # as the decision just taken left it
            tried = {w.direction.family for w in graph.workers.values()}
            fresh = next(d.family for d in self.openings(ctx, graph) if d.family not in tried)
            SEEN["prefer"] = fresh
            FORM["send"](text="try the other family", prefer=fresh, flow="pause")
        elif FormGuidedMain.asked == 2:
            FORM["send"](flow="resume")


@pytest.mark.heavy
def test_the_form_appends_one_event_the_next_decision_cites_it_and_pause_holds_launches(browser, tmp_path, monkeypatch):
    runs, keys = tmp_path / "runs", tmp_path / "keys"
    runs.mkdir()
    run_dir = runs / "guided"
    agent_names("main")  # the built-in agents registered before one is replaced
    monkeypatch.setitem(MAINS, "policy", FormGuidedMain)
    FormGuidedMain.asked = 0
    SEEN.clear()
    server = Server(Served(runs, keys, None))  # type: ignore[arg-type]  # the runs index, empty until the run starts
    sent: list[int] = []

    def send(text: str = "", prefer: str = "", flow: str = "") -> None:
        """Fill in and submit the form on the run's live page, as a person would."""
        before = SEEN["size"]
        loaded = load_url(browser, server.url + "run/guided/")
        page = loaded.page
        page.fill("#guidance textarea[name=text]", text)
        page.fill("#guidance input[name=prefer]", prefer)
        page.select_option("#guidance select[name=flow]", flow)
        with page.expect_navigation():
            page.click("#guidance button[type=submit]")
        assert page.url == server.url + "run/guided/"  # taken: back to the page, not a refusal
        assert loaded.errors == [] and all(u.startswith(server.url) for u in loaded.requests)
        page.close()
        with ExpOS.open(run_dir, key_dir=keys, writable=False) as x:
            new = x.events("human.guidance")
            assert x.run.ledger.size() == before + 1  # exactly one event appended
        sent.append(new[-1].seq)

    FORM["send"] = send
    try:
        spec = RunSpec(
            budget="20m",
            backend="sim",
            world=generate_world(1),
            slots=2,
            seed=3,
            run_dir=run_dir,
            key_dir=str(keys),
        )
        start_run(spec, display=PlainDisplay(io.StringIO()))
    finally:
        server.stop()
        FORM.clear()
    assert len(sent) == 2
    with ExpOS.open(run_dir, key_dir=keys, writable=False) as x:
        given = x.events("human.guidance")
        assert [g.seq for g in given] == sent
        pause, resume = given
        assert pause.actor.role == "operator" and pause.actor.cap
        assert pause.payload == {
            "text": "try the other family",
            "prefer": [SEEN["prefer"]],
            "avoid": [],
            "stop_worker": [],
            "flow": "pause",
        }
        assert resume.payload["flow"] == "resume" and resume.payload["text"] == ""
        decisions = x.events("decision.record")
        for g in given:  # the Main's next decision answers the guidance, citing it
            following = next(d for d in decisions if d.seq > g.seq)
            assert g.seq in following.payload["evidence"], following.payload
            assert "operator guidance" in following.payload["rationale"]
        starts = x.events("orchestra.job.start")
        assert not [s for s in starts if pause.seq < s.seq < resume.seq]  # nothing launched while paused
        wid = next(w.id for w in x.projection().state.workers.values() if w.direction["family"] == SEEN["prefer"])
        added = next(e.seq for e in x.events("worker.add") if e.payload["worker_id"] == wid)
        assert pause.seq < added < resume.seq  # opened for the guidance while paused: it waited,
        assert wid in {s.payload["node"] for s in starts if s.seq > resume.seq}  # and launched after
    assert _verify(run_dir, keys) == 0


def _verify(run_dir: Path, keys: Path) -> int:
    from rsi_master.cli._main import main

    return main(["verify", str(run_dir), "--key-dir", str(keys)])
