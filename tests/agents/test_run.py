"""Choosing agents for `rsi-master run`, the Main agent's turns, and one complete small run
with all three roles played by the fake model (it trains: 2 steps, 5 evaluation items)."""

from __future__ import annotations

import json
import time

import pytest

from rsi_master.agents import LLM_AGENTS, LLMMain, resolve_setup
from rsi_master.cli._main import main
from rsi_master.events import Continue
from rsi_master.expos import Caller, ExpOS, audit
from rsi_master.orchestra import MainContext, PolicyMain, load_graph
from rsi_master.rundir import verify_run

from ..orchestra.helpers import new_run
from .helpers import fake, record_llm


def test_llm_agents_without_endpoint_or_key_stop_before_the_run_starts(tmp_path, capsys):
    run_dir = tmp_path / "r"
    assert main(["run", "--agents", "llm", "--dir", str(run_dir), "--budget", "60"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rsi-master: error: the main agent is an LLM agent and needs an endpoint")
    assert "an API key" in err and "Traceback" not in err
    assert not run_dir.exists()
    # Only the roles that are LLM agents need one; the key is checked too.
    assert (
        main(
            [
                "run",
                "--reviewer",
                "llm",
                "--llm-base-url",
                "http://127.0.0.1:9/v1",
                "--llm-model",
                "m",
                "--dir",
                str(run_dir),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "the reviewer agent is an LLM agent and needs an API key" in err and "endpoint" not in err
    assert not run_dir.exists()


@pytest.mark.heavy
def test_an_llm_endpoint_nobody_listens_on_stops_the_run_before_it_starts(tmp_path, capsys, monkeypatch):
    """A base URL with no server: a one-line error after a few tries, in seconds, nothing written,
    rather than every agent turn failing after its retries until the budget is spent."""
    import socket

    with socket.socket() as s:  # a port nothing listens on (bound, then released)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("RSI_MASTER_LLM_API_KEY", "k")
    run_dir = tmp_path / "r"
    url = f"http://127.0.0.1:{port}/v1"
    t0 = time.time()
    args = ["run", "--agents", "llm", "--llm-base-url", url, "--llm-model", "m", "--budget", "60"]
    assert main([*args, "--dir", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"the LLM endpoint {url} did not answer after 3 tries" in err and len(err.splitlines()) == 1
    assert time.time() - t0 < 30 and not run_dir.exists()


def test_config_files_and_environment_choose_a_model_per_role(tmp_path, monkeypatch, capsys):
    cfg = tmp_path / "llm.toml"
    cfg.write_text(
        '[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "cheap"\n[main]\nmodel = "strong"\n'
        "price_in_per_mtok = 3.0\n"
    )
    monkeypatch.setenv("RSI_MASTER_LLM_API_KEY", "k")
    monkeypatch.setenv("RSI_MASTER_REVIEWER_MODEL", "careful")
    setup = resolve_setup("llm", worker="scripted", config_file=str(cfg))
    assert setup.agents == {"main": LLM_AGENTS["main"], "worker": "tpe", "reviewer": LLM_AGENTS["reviewer"]}
    assert setup.llm["main"].model == "strong" and setup.llm["main"].price_in_per_mtok == 3.0
    assert setup.llm["reviewer"].model == "careful" and "worker" not in setup.llm
    assert setup.llm["main"].api_key_env == "RSI_MASTER_LLM_API_KEY"
    assert main(["run", "--main", "lm", "--dir", str(tmp_path / "r")]) == 2
    assert (
        "--main 'lm': give scripted, llm, a registered main agent "
        "(main-pick, no-review, pbt, policy, search, single)" in capsys.readouterr().err
    )
    assert main(["run", "--worker", "nowhere.module:Worker", "--dir", str(tmp_path / "r")]) == 2
    assert "--worker nowhere.module:Worker: cannot load it" in capsys.readouterr().err
    # Importable but no agent class: one line before anything is written, not a traceback mid-run.
    assert main(["run", "--main", "os:path", "--dir", str(tmp_path / "r")]) == 2
    assert "--main os:path: path is a module, not a class" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    cfg.write_text('[llm]\napi_key = "sk-secret"\n')
    assert main(["run", "--agents", "llm", "--llm-config", str(cfg), "--dir", str(tmp_path / "r")]) == 2
    assert "keep keys in the environment" in capsys.readouterr().err
    monkeypatch.setenv("RSI_MASTER_LLM_MAX_STEPS", "zero")
    assert main(["run", "--agents", "llm", "--llm-provider", "fake", "--dir", str(tmp_path / "r")]) == 2
    assert "max_steps" in capsys.readouterr().err


def _main_ctx(expos, worker="tpe", budget_s=100.0):
    t0 = time.time()
    return MainContext(expos, Caller("main", "main"), budget_s, lambda: time.time() - t0, 2, 0, worker)


def _call(name, arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_llm_main_gets_directions_completed_and_its_decisions_bound_to_the_event(tmp_path):
    script = {
        "main": {
            "start": [
                _call("worker_add", {"worker_id": "w1", "task": "t", "direction": {"family": "nope"}}),
                _call("worker_add", {"worker_id": "w1", "task": "t", "direction": {"family": "answer_only"}}),
                _call("decision_record", {"action": "branch", "rationale": "open", "evidence": []}),
            ],
            "finalize": [
                _call("decision_record", {"action": "continue", "rationale": "ok", "evidence": [], "answers": 0})
            ],
            "idle": [_call("worker_add", {"worker_id": "w2", "task": "t", "direction": {"family": "answer_only"}})],
            "finish": [_call("decision_record", {"action": "continue", "rationale": "x", "evidence": []})],
        }
    }
    with new_run(tmp_path) as expos:
        record_llm(expos, {"main": fake(tmp_path, script, max_steps=3)})
        m, ctx = LLMMain(), _main_ctx(expos)
        m.start(ctx, load_graph(expos.reader))
        steps = [e.payload["tool_calls"][0] for e in expos.events("agent.step")]
        assert steps[0]["status"] == "invalid" and "must be one of" in steps[0]["error"]
        d = load_graph(expos.reader).workers["w1"].direction
        assert d.agent == "tpe" and d.family == "answer_only" and d.knobs and d.train
        assert d.seconds == 30.0  # the allowance: 30% of the budget
        # An answer to an event is bound to it by the harness, whatever the model wrote.
        m.on_event(ctx, load_graph(expos.reader), (5, "finalize", "w1"))
        assert (
            load_graph(expos.reader).decisions[-1].answers == 5 and load_graph(expos.reader).decisions[-1].detail == {}
        )
        assert 5 in load_graph(expos.reader).handled_events()
        # An idle turn that adds a node but records no decision gets one from the harness.
        assert m.on_idle(ctx, load_graph(expos.reader), 1) is True
        last = load_graph(expos.reader).decisions[-1]
        assert last.rationale.startswith("[recorded by the harness]") and "1 node(s) added" in last.rationale
        # The end is a stop: another action is refused back to the model, the harness records the stop.
        m.finish(ctx, load_graph(expos.reader), "budget spent")
        last = load_graph(expos.reader).decisions[-1]
        assert last.action == "stop" and last.detail["fallback"] == "step_limit"


def test_llm_main_gets_a_familys_usual_method_and_grpo_batches_that_fit(tmp_path):
    """On a task directory's train pool, `pool` offers SFT, LoRA and DPO: a Main that names the
    family alone gets SFT (its usual method), one that names a method gets it. A GRPO direction
    whose batch sizes are no multiple of its completions per prompt is refused at `worker_add`
    (every trial would fail in training); ranges the Main gives keep the method's own others."""
    from ..tasks.dir.helpers import make_task_dir

    task = make_task_dir(tmp_path / "task", "numeric", n=4, train=8)
    bad_batch = {"batch_size": {"kind": "choice", "choices": [2, 4, 6]}}
    good_batch = {"batch_size": {"kind": "choice", "choices": [8]}}
    script = {
        "main": {
            "start": [
                _call("worker_add", {"worker_id": "w1", "task": "t", "direction": {"family": "pool"}}),
                _call("worker_add", {"worker_id": "w2", "task": "t", "direction": {"family": "pool", "method": "dpo"}}),
                _call(
                    "worker_add", {"worker_id": "w3", "task": "t", "direction": {"family": "pool", "method": "grpo"}}
                ),
                _call(
                    "worker_add",
                    {"worker_id": "w3", "task": "t", "direction": {"family": "pool_prompts", "train": bad_batch}},
                ),
                _call(
                    "worker_add",
                    {"worker_id": "w3", "task": "t", "direction": {"family": "pool_prompts", "train": good_batch}},
                ),
                _call("decision_record", {"action": "branch", "rationale": "open", "evidence": []}),
            ],
        }
    }
    with new_run(tmp_path, task=str(task)) as expos:
        record_llm(expos, {"main": fake(tmp_path, script, max_steps=6)})
        m, ctx = LLMMain(), _main_ctx(expos)
        m.start(ctx, load_graph(expos.reader))
        workers = load_graph(expos.reader).workers
        assert (workers["w1"].direction.family, workers["w1"].direction.method) == ("pool", "sft")
        steps = [e.payload["tool_calls"][0] for e in expos.events("agent.step")]
        assert [s["status"] for s in steps[:5]] == ["ok", "ok", "invalid", "invalid", "ok"], steps
        assert "direction.method for family pool must be one of ['sft', 'lora', 'dpo']" in steps[2]["error"]
        assert "batch sizes [2, 6] are not" in steps[3]["error"], steps[3]["error"]
        workers = load_graph(expos.reader).workers
        assert workers["w2"].direction.method == "dpo"
        grpo = workers["w3"].direction
        assert grpo.method == "grpo" and grpo.train["grpo_num_generations"].value == 4
        assert grpo.train["batch_size"].choices == [8] and "learning_rate" in grpo.train
        assert all(t["t:batch_size"] == 8 for t in grpo.enqueue if "t:batch_size" in t)
        # The brief lists each family once, with its methods, the usual one first.
        assert m._families(ctx)["pool"] == ["sft", "lora", "dpo"] and m._families(ctx)["pool_prompts"] == ["grpo"]


def test_programmatic_main_names_the_runs_worker_agent(tmp_path):
    with new_run(tmp_path) as expos:
        PolicyMain().start(_main_ctx(expos, worker=LLM_AGENTS["worker"]), load_graph(expos.reader))
        agents = {w.direction.agent for w in load_graph(expos.reader).workers.values()}
        assert agents == {LLM_AGENTS["worker"]}


@pytest.mark.parametrize(
    "backend",
    [
        # The same agents, tools and ledger on the simulated backend: a simulated hour in seconds.
        ["--backend", "sim", "--world-seed", "0", "--budget", "1h"],
        # Real training and the sealed evaluator on the built-in task: a 150-s real-clock run.
        pytest.param(["--task", "knowledge", "--budget", "150"], marks=pytest.mark.slow, id="real"),
    ],
    ids=["sim", "real"],
)
def test_fake_model_drives_all_three_roles_through_a_complete_run(tmp_path, capsys, backend):
    run_dir = tmp_path / "run"
    code = main(
        [
            "run",
            "--agents",
            "llm",
            "--llm-provider",
            "fake",
            *backend,
            "--slots",
            "1",
            "--eval-limit",
            "5",
            "--final-limit",
            "5",
            "--dir",
            str(run_dir),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    lines = dict(line.split(": ", 1) for line in out.split("\n---\n", 1)[1].splitlines() if ": " in line)
    assert lines["workers"] == "1" and lines["reviews"] == "1" and lines["experiments"] == "1"
    assert lines["selected"].startswith("exp-") and int(lines["llm_tokens"]) > 0
    with ExpOS.open(run_dir, writable=False) as expos:
        (cfg,) = expos.events("agents.config")
        assert cfg.payload["agents"] == LLM_AGENTS
        for role, entry in cfg.payload["llm"].items():
            assert entry["provider"] == "fake" and entry["prompt"]["version"] >= 1
            text = expos.run.store.read_bytes(entry["prompt"]["artifact"]).decode()
            assert role.capitalize() in text or role in text
        assert "key" not in json.dumps(cfg.payload).replace("api_key_env", "")
        ends = {(e.actor.role, e.payload["episode"]): e.payload["reason"] for e in expos.events("agent.end")}
        assert ends[("worker", "worker")] == "finished" and ends[("reviewer", "reviewer")] == "finished"
        assert ends[("main", "start")] == ends[("main", "finalize")] == ends[("main", "finish")] == "finished"
        assert ends[("main", "idle")] == "replied"
        g = load_graph(expos.reader)
        assert [d.action for d in g.decisions] == ["branch", "verify", "continue", "stop"]
        assert g.reviewers["r1"].report.verdict == "pass"
        # The scripted agents send typed messages: a recipe, findings and a recommendation.
        (fin,) = expos.events("worker.finalize")
        assert fin.payload["recipe"]["experiment_id"] == fin.payload["candidates"][0]
        (rec,) = g.reviewers["r1"].report.recommendations
        assert isinstance(rec, Continue) and rec.experiment_id == fin.payload["candidates"][0]
        assert g.reviewers["r1"].report.findings[0].split == "review"
        (nominated,) = expos.events("candidate.nominate")
        assert nominated.payload["experiment_id"] == lines["selected"]
        assert audit(expos).hacking_rate == 0.0
        assert expos.events("guard.blocked") == [] and expos.events("tool.invalid") == []
    assert verify_run(run_dir).ok


def test_resume_checks_the_recorded_llm_agents_keys_first(tmp_path, capsys):
    from rsi_master.agents import LLMConfig

    with new_run(tmp_path) as expos:
        record_llm(expos, {"main": LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="RSI_TEST_KEY")})
        size = expos.run.ledger.size()
    assert main(["resume", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "the main agent is an LLM agent and needs an API key" in err and "RSI_TEST_KEY is empty" in err
    with ExpOS.open(tmp_path / "run", writable=False) as expos:
        assert expos.run.ledger.size() == size  # nothing written


@pytest.mark.parametrize(
    "world",
    [
        # The same agents, door and scheduler on the simulated backend: its clock is simulated.
        {"backend": "sim", "world": 0, "budget": "1h"},
        # The built-in task on a 90-s real-clock budget.
        pytest.param({"task": "knowledge", "budget": 90}, marks=pytest.mark.slow, id="real"),
    ],
    ids=["sim", "real"],
)
def test_a_worker_whose_provider_keeps_failing_ends_and_the_run_goes_on(tmp_path, world):
    from rsi_master.agents import AgentsSetup, record_setup
    from rsi_master.orchestra import RunSpec, start_run
    from rsi_master.sim import generate_world

    from .helpers import script_file

    script = {
        "main": {
            "start": [
                _call("worker_add", {"worker_id": "w1", "task": "t", "direction": {}}),
                _call("decision_record", {"action": "branch", "rationale": "open", "evidence": []}),
            ],
            "finalize": [
                _call(
                    "decision_record",
                    {
                        "action": "continue",
                        "rationale": "${brief.event.node} ended",
                        "evidence": ["${brief.event.seq}"],
                    },
                )
            ],
            "idle": [{"content": "nothing to add"}],
            "finish": [_call("decision_record", {"action": "stop", "rationale": "done", "evidence": []})],
        },
        "worker": {"worker": [{"error": "server"}] * 5},
    }
    path = script_file(tmp_path, script)
    from rsi_master.agents import LLMConfig

    llm = {r: LLMConfig(provider="fake", script=path, retries=2, backoff_s=0.0) for r in ("main", "worker")}
    setup = AgentsSetup(
        agents={"main": LLM_AGENTS["main"], "worker": LLM_AGENTS["worker"], "reviewer": "evidence"}, llm=llm
    )
    summary = start_run(
        RunSpec(
            **{k: generate_world(v) if k == "world" else v for k, v in world.items()},
            slots=1,
            eval_limit=5,
            run_dir=tmp_path / "run",
            main=LLM_AGENTS["main"],
            worker=LLM_AGENTS["worker"],
            setup=lambda expos: record_setup(expos, setup),
        )
    )
    assert summary["experiments"] == 0 and summary["workers"] == 1
    with ExpOS.open(tmp_path / "run", writable=False) as expos:
        g = load_graph(expos.reader)
        fin = g.workers["w1"].finalize
        assert fin.summary.startswith("[ended by the harness") and "provider_error" in fin.summary
        # The Main was told: its decision answers that finalize event.
        answered = [d for d in g.decisions if d.answers == g.workers["w1"].finalize_seq]
        assert answered and answered[0].rationale == "w1 ended"
        assert [d.action for d in g.decisions][-1] == "stop" and g.finished is not None
        assert [e.payload["kind"] for e in expos.events("agent.error")] == ["server"] * 3
        assert [j.status for j in g.jobs] == ["done"]
