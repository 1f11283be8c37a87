"""Human guidance on a simulated campaign, through `rsi-master guide`: the Main's next decision
cites the event, a pause holds launches until the resume, a preferred direction opens, a Worker
can be stopped; refusals (a finished run, a text over 4 kB, an unknown direction or Worker) are one
line with nothing written; an agent cannot write guidance through the door."""

from __future__ import annotations

import io

import pytest

from rsi_master.agents import LLMMain
from rsi_master.cli._main import main as cli
from rsi_master.expos import ExpOS, ToolInvalid, ToolRefused
from rsi_master.orchestra import PlainDisplay, PolicyMain, RunSpec, load_graph, start_run
from rsi_master.orchestra._guidance import GuidancePart
from rsi_master.sim import generate_world

from .helpers import MAIN, new_run

RUN: dict[str, str] = {}  # the campaign's directory, for the Main below to guide


class GuidedMain(PolicyMain):
    """The policy Main, with a person typing `rsi-master guide` at its first two events: at the
    first, pause, prefer an unexplored direction and a text; at the second, resume."""

    asked = 0

    def on_event(self, ctx, graph, event):
        GuidedMain.asked += 1
        if GuidedMain.asked == 1:
            tried = {w.direction.family for w in graph.workers.values()}
            fresh = next(d.family for d in self.openings(ctx, graph) if d.family not in tried)
            RUN["prefer"] = fresh
            assert cli(["guide", RUN["dir"], "--pause", "--prefer", fresh, "--text", "try the other family"]) == 0
        elif GuidedMain.asked == 2:
            assert cli(["guide", RUN["dir"], "--resume"]) == 0
        elif "stop" not in RUN:
            running = [j.node for j in graph.jobs if j.end_ts is None and j.kind == "worker"]
            if running:
                RUN["stop"] = running[0]
                assert cli(["guide", RUN["dir"], "--stop-worker", running[0]]) == 0
        super().on_event(ctx, graph, event)


@pytest.fixture
def campaign(tmp_path):
    run = tmp_path / "run"
    RUN.clear()
    RUN["dir"] = str(run)
    GuidedMain.asked = 0
    start_run(
        RunSpec(
            budget="20m",
            backend="sim",
            world=generate_world(1),
            slots=2,
            seed=3,
            run_dir=run,
            main="tests.orchestra.test_guidance:GuidedMain",
        ),
        display=PlainDisplay(io.StringIO()),
    )
    return run


def test_the_mains_next_decision_cites_the_guidance_and_pause_holds_launches(campaign, capsys):
    with ExpOS.open(campaign, writable=False) as x:
        guidance = x.events("human.guidance")
        assert [g.payload.get("flow") for g in guidance] == ["pause", "resume", None]
        assert all(g.actor.role == "operator" and g.actor.cap for g in guidance)
        pause, resume = guidance[0].seq, guidance[1].seq
        decisions = x.events("decision.record")
        # The Main answered it before any launch, citing it, and the Worker it opened for the
        # preferred direction cites it too.
        answer = next(d for d in decisions if d.payload["detail"].get("guidance") == pause)
        assert pause in answer.payload["evidence"]
        assert not [e for e in x.events("orchestra.job.start") if pause < e.seq < answer.seq]
        st = x.projection().state
        wid = next(w.id for w in st.workers.values() if w.direction["family"] == RUN["prefer"])
        opened = next(d for d in decisions if d.payload["detail"].get("worker") == wid)
        assert pause in opened.payload["evidence"] and "operator guidance" in opened.payload["rationale"]
        assert any(d.payload["detail"].get("guidance") == resume for d in decisions)
        starts = [e.seq for e in x.events("orchestra.job.start")]
        # Nothing launched while paused, though the preferred Worker waited; it launched after.
        assert not [s for s in starts if pause < s < resume]
        assert wid in {e.payload["node"] for e in x.events("orchestra.job.start") if e.seq > resume}
        assert x.projection().part(GuidancePart).paused is False
        # A running Worker stopped: asked to finalize at once, long before its deadline.
        stop = next(g for g in x.events("human.guidance") if g.payload.get("stop_worker"))
        assert stop.payload["stop_worker"] == [RUN["stop"]]
        answer = next(d for d in decisions if d.payload["detail"].get("guidance") == stop.seq)
        assert answer.payload["action"] == "revise" and stop.seq in answer.payload["evidence"]
        job = next(j for j in load_graph(x.reader).jobs if j.node == RUN["stop"])
        assert job.status == "done" and job.end_ts < job.deadline - 60
        assert x.projection().state.workers[RUN["stop"]].finalize_seq is not None
    assert cli(["verify", str(campaign)]) == 0
    # The run has finished: more guidance is one line and writes nothing.
    capsys.readouterr()
    with ExpOS.open(campaign, writable=False) as x:
        size = x.run.ledger.size()
    assert cli(["guide", str(campaign), "--text", "more"]) == 2
    err = capsys.readouterr().err.strip()
    assert "the run has finished" in err and len(err.splitlines()) == 1
    with ExpOS.open(campaign, writable=False) as x:
        assert x.run.ledger.size() == size


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--text", "é" * 2049], "4096"),
        (["--prefer", "no_such_family"], "unknown direction"),
        (["--stop-worker", "w99"], "no Worker 'w99'"),
        ([], "guidance says nothing"),
        (["--prefer", "answer_only", "--avoid", "answer_only"], "both preferred and avoided"),
    ],
)
def test_bad_guidance_is_one_line_and_writes_nothing(tmp_path, capsys, args, message):
    with new_run(tmp_path) as x:
        size = x.run.ledger.size()
    assert cli(["guide", str(tmp_path / "run"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    with ExpOS.open(tmp_path / "run", writable=False) as x:
        assert x.run.ledger.size() == size


def test_guidance_is_recorded_as_the_operator_and_no_agent_can_write_one(tmp_path, capsys):
    with new_run(tmp_path) as x:
        x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "t", "direction": {"family": "answer_only"}})
    assert cli(["guide", str(tmp_path / "run"), "--avoid", "answer_only", "--stop-worker", "w1"]) == 0
    assert "guidance: event" in capsys.readouterr().out
    with ExpOS.open(tmp_path / "run") as x:
        (g,) = x.events("human.guidance")
        assert g.actor.role == "operator" and g.payload["stop_worker"] == ["w1"]
        assert x.projection().part(GuidancePart).avoided == {"answer_only"}
        # An agent's capability names its own role; an operator capability calls no tool.
        caller = x.authenticate(x.issue("operator", "someone"))
        with pytest.raises(ToolRefused):
            x.call(caller, "decision.record", {"action": "continue", "rationale": "x", "evidence": []})
        for role in ("main", "worker"):
            agent = x.authenticate(x.issue(role, "w1"))
            with pytest.raises(ToolInvalid):  # no tool writes the kind
                x.call(agent, "human.guidance", {"text": "forged"})
        assert len(x.events("human.guidance")) == 1
        assert load_graph(x.reader).workers["w1"] is not None


class GuidedLLMMain(LLMMain):
    """The LLM Main (on the fake provider), guided at its first event."""

    def on_event(self, ctx, graph, event):
        if not ctx.expos.events("human.guidance"):
            assert cli(["guide", RUN["dir"], "--text", "favour the shortest recipes"]) == 0
        super().on_event(ctx, graph, event)


def test_an_llm_main_gets_the_text_and_its_decision_cites_the_guidance(tmp_path, monkeypatch):
    from rsi_master.orchestra import agent_names
    from rsi_master.orchestra._registry import MAINS

    # The run names the Main `llm`; this subclass of the LLM Main types the guidance.
    agent_names("main")  # the built-in agents registered before one is replaced
    monkeypatch.setitem(MAINS, "llm", GuidedLLMMain)
    run = tmp_path / "run"
    RUN["dir"] = str(run)
    args = ["run", "--backend", "sim", "--world-seed", "1", "--budget", "20m", "--dir", str(run)]
    llm = ["--agents", "llm", "--llm-provider", "fake"]
    assert cli(args + llm) == 0
    with ExpOS.open(run, writable=False) as x:
        (g,) = x.events("human.guidance")
        answer = next(d for d in x.events("decision.record") if d.payload["detail"].get("guidance") == g.seq)
        assert g.seq in answer.payload["evidence"]
        assert any(s.payload["episode"] == "guidance" for s in x.events("agent.step"))


def test_a_main_cannot_preempt_guidance_and_a_main_without_on_guidance_still_answers(tmp_path):
    from rsi_master.orchestra import Scheduler

    with new_run(tmp_path, main="tests.orchestra.helpers:FillMain") as x:
        sched = Scheduler(x, PlainDisplay(io.StringIO()))
        sched.start()  # FillMain adds s1 and s2, not launched yet
        size = x.run.ledger.size()
        for forged in (size + 4, "x"):  # the seq the guidance will have, and garbage
            x.call(
                MAIN,
                "decision.record",
                {"action": "continue", "rationale": "r", "evidence": [], "detail": {"guidance": forged}},
            )
        assert cli(["guide", str(tmp_path / "run"), "--stop-worker", "s1"]) == 0
        (g,) = x.events("human.guidance")
        assert g.seq == size + 4  # each decision is two events: the guidance has the forged seq
        sched._guide(x.projection())
        abandoned = x.events("orchestra.abandon")
        assert [(e.payload["node"], e.payload["attempts"]) for e in abandoned] == [("s1", 0)]
        answer = x.events("decision.record")[-1]
        assert answer.payload["detail"]["guidance"] == g.seq and answer.payload["evidence"] == [g.seq]
