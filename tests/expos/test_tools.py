"""The tool registry and the `expos` CLI: roles, validation, schemas, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rsi_master.errors import RsiMasterError
from rsi_master.expos import TOOLS, Caller, ExpOS, ToolInvalid, ToolRefused, llm_tool_schemas, tools_for


@pytest.fixture
def run(tmp_path):
    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=4) as x:
        yield x


def test_contract_is_the_first_event_and_holds_no_protected_item(run):
    first = next(run.run.ledger.events(limit=1))
    assert first.kind == "contract.freeze" and first.seq == 0
    c = run.contract
    assert c.base_model_digest == c.base_model_artifact and run.run.store.kind(c.base_model_artifact) == "dir"
    assert run.run.store.kind(c.evaluator.evaluator_artifact) == "dir"
    assert {k: len(v) for k, v in c.evaluator.sample_ids.items()} == {"dev": 4, "review": 4, "final": 4}
    body = json.dumps(first.payload)
    for split in ("dev", "review", "final"):
        for item in run.protected_task().eval_items(split)[:4]:
            assert item.prompt not in body


def test_final_limit_keeps_the_whole_final_split_for_the_harness(tmp_path):
    from rsi_master.tasks import get_task, task_spec

    full = task_spec(get_task("knowledge"))["sample_ids"]
    with ExpOS.create(tmp_path / "all", "knowledge", eval_limit=4, final_limit=0) as x:
        ids = x.contract.evaluator.sample_ids
    assert (len(ids["dev"]), len(ids["review"])) == (4, 4) and ids["final"] == full["final"]
    with ExpOS.create(tmp_path / "some", "knowledge", eval_limit=4, final_limit=7) as x:
        assert x.contract.evaluator.sample_ids["final"] == full["final"][:7]
    with pytest.raises(RsiMasterError, match="final_limit"):
        ExpOS.create(tmp_path / "bad", "knowledge", final_limit=-1)
    assert not (tmp_path / "bad").exists()


def test_every_role_has_its_tools_and_schemas():
    names = {role: {t.name for t in tools_for(role)} for role in ("public", "worker", "reviewer", "main")}
    assert {"contract.show", "quota.show", "events.tail"} <= names["public"]
    assert {"data.generate", "data.register", "data.filter", "data.mix", "experiment.submit", "results.list",
            "worker.finalize"} <= names["worker"]
    assert {"experiment.inspect", "eval.review", "eval.compare", "audit.run", "review.submit"} <= names["reviewer"]
    assert {"graph.read", "worker.add", "review.request", "decision.record", "candidate.nominate"} <= names["main"]
    assert "experiment.submit" not in names["main"]  # the Main agent never runs experiments
    for role in ("worker", "reviewer", "main"):
        for schema in llm_tool_schemas(role):
            fn = schema["function"]
            assert fn["name"].replace("_", "").isalnum() and fn["parameters"]["type"] == "object"
            assert fn["description"]


def test_role_refusals_and_invalid_input_are_recorded(run):
    with pytest.raises(ToolRefused, match="may not call"):
        run.call(Caller("main", "m"), "experiment.submit", {"dataset": "a" * 64})
    with pytest.raises(ToolInvalid, match="unknown tool"):
        run.call(Caller("worker", "w"), "weights.download", {})
    with pytest.raises(ToolInvalid, match="n"):
        run.call(Caller("worker", "w"), "data.generate", {"family": "answer_only", "n": -5})
    kinds = [e.kind for e in run.run.ledger.events(since=1)]
    assert kinds == ["guard.blocked", "tool.invalid", "tool.invalid"]
    blocked = next(run.run.ledger.events(kinds=["guard.blocked"]))
    assert blocked.actor.role == "main" and blocked.payload["tool"] == "experiment.submit"


def test_public_tools_work_for_everyone(run):
    for role in ("public", "worker", "reviewer", "main"):
        view = run.call(Caller(role, "x"), "contract.show")
        assert view.split_sizes == {"dev": 4, "review": 4, "final": 4}
    assert run.call(Caller("public", "p"), "quota.show").experiments_left == run.contract.budget.max_experiments
    assert run.call(Caller("public", "p"), "events.tail", {"n": 3}).events[-1].kind == "tool.call"


def test_graph_tools_build_the_research_graph(run):
    main = Caller("main", "main")
    run.call(main, "worker.add", {"worker_id": "w1", "task": "answer-only"})
    run.call(main, "worker.add", {"worker_id": "w2", "task": "scratchpad", "predecessors": ["w1"]})
    with pytest.raises(ToolRefused, match="unknown predecessors"):
        run.call(main, "worker.add", {"worker_id": "w3", "task": "x", "predecessors": ["nobody"]})
    req = run.call(main, "review.request", {"reviewer_id": "r1", "question": "q", "scope": ["w1", "w2"]})
    with pytest.raises(ToolRefused, match="do not exist"):
        run.call(main, "decision.record", {"action": "branch", "rationale": "r", "evidence": [10_000]})
    run.call(main, "decision.record", {"action": "verify", "rationale": "check w2", "evidence": [req.seq]})
    graph = run.call(main, "graph.read")
    assert [w["worker_id"] for w in graph.workers] == ["w1", "w2"] and graph.decisions == 1


def test_opening_a_plain_run_as_expos_is_refused(tmp_path):
    from rsi_master.rundir import RunDir

    RunDir.create(tmp_path / "plain").close()
    with pytest.raises(RsiMasterError, match="not an ExpOS run"):
        ExpOS.open(tmp_path / "plain")


def _expos(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "rsi_master.cli._expos", *args], input=stdin,
                          capture_output=True, text=True)


def test_expos_cli_exit_codes(run, tmp_path):
    path = str(run.run.path)
    run.close()
    ok = _expos("--run", path, "--role", "worker", "--id", "w1", "--json", "contract.show")
    assert ok.returncode == 0 and json.loads(ok.stdout)["task"] == "arithmetic"
    refused = _expos("--run", path, "--role", "worker", "--id", "w1", "eval.review", '{"experiment_id": "x"}')
    assert refused.returncode == 3 and "refused" in refused.stderr
    invalid = _expos("--run", path, "--role", "worker", "--id", "w1", "data.generate", "-", stdin='{"n": "many"}')
    assert invalid.returncode == 2
    not_json = _expos("--run", path, "--role", "worker", "contract.show", "{oops")
    assert not_json.returncode == 2 and "JSON" in not_json.stderr
    no_run = _expos("--run", str(tmp_path / "missing"), "contract.show")
    assert no_run.returncode == 5 and "no such run directory" in no_run.stderr
    listing = _expos("--role", "reviewer", "tools")
    assert listing.returncode == 0 and "eval.review" in listing.stdout and "data.generate" not in listing.stdout


def test_an_external_main_may_not_name_the_code_a_worker_node_runs(run):
    path = str(run.run.path)
    run.close()
    add = '{"worker_id": "w1", "task": "t", "direction": {"family": "answer_only", "agent": "os:getcwd"}}'
    refused = _expos("--run", path, "--role", "main", "--id", "m", "worker.add", add)
    assert refused.returncode == 3 and "the run's Worker agent ('tpe')" in refused.stderr
    ok = _expos("--run", path, "--role", "main", "--id", "m", "worker.add", add.replace("os:getcwd", "tpe"))
    assert ok.returncode == 0
    with ExpOS.open(path, writable=False) as x:
        assert [e.payload["tool"] for e in x.events("guard.blocked")] == ["worker.add"]
        assert [e.payload["direction"]["agent"] for e in x.events("worker.add")] == ["tpe"]


def test_registry_names_are_unique_and_llm_safe():
    llm = [t.llm_name for t in TOOLS.values()]
    assert len(llm) == len(set(llm))
