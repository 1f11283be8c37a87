"""The tool registry and the `expos` CLI: roles, validation, schemas, exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from rsi_master.errors import RsiMasterError
from rsi_master.expos import TOOLS, Caller, ExpOS, ToolInvalid, ToolRefused, llm_tool_schemas, tools_for
from tests.helpers import capability_file


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
    assert {
        "data.generate",
        "data.register",
        "data.filter",
        "data.mix",
        "experiment.submit",
        "results.list",
        "worker.finalize",
    } <= names["worker"]
    assert {"experiment.inspect", "eval.review", "eval.compare", "audit.run", "review.submit"} <= names["reviewer"]
    assert {"graph.read", "worker.add", "review.request", "decision.record", "candidate.nominate"} <= names["main"]
    assert "experiment.submit" not in names["main"]  # the Main agent never runs experiments
    for role in ("worker", "reviewer", "main"):
        for schema in llm_tool_schemas(role):
            fn = schema["function"]
            assert fn["name"].replace("_", "").isalnum() and fn["parameters"]["type"] == "object"
            assert fn["description"]


@pytest.mark.parametrize("n", [True, "5", 5.0])
def test_a_number_is_a_json_number(run, n):
    """`true` or `"5"` where the schema says integer is invalid input, recorded as such, never read as 1 or 5."""
    with pytest.raises(ToolInvalid, match="n: Input should be a valid integer"):
        run.call(Caller("worker", "w"), "data.generate", {"family": "answer_only", "n": n})
    last = list(run.run.ledger.events(kinds=["tool.invalid"]))[-1]
    assert last.payload["tool"] == "data.generate" and "valid integer" in last.payload["reason"]
    assert not list(run.run.ledger.events(kinds=["data.generate"]))


def test_role_refusals_and_invalid_input_are_recorded(run):
    with pytest.raises(ToolRefused, match="may not call"):
        run.call(Caller("main", "m"), "experiment.submit", {"dataset": "a" * 64})
    with pytest.raises(ToolInvalid, match="unknown tool"):
        run.call(Caller("worker", "w"), "weights.download", {})
    with pytest.raises(ToolInvalid, match="n"):
        run.call(Caller("worker", "w"), "data.generate", {"family": "answer_only", "n": -5})
    # Input that passes the schema but that the tool itself finds invalid is on the record too.
    with pytest.raises(ToolInvalid, match="no generator family 'answer_onyl'"):
        run.call(Caller("worker", "w"), "data.generate", {"family": "answer_onyl", "n": 5})
    kinds = [e.kind for e in run.run.ledger.events(since=1)]
    assert kinds == ["guard.blocked", "tool.invalid", "tool.invalid", "tool.invalid"]
    late = list(run.run.ledger.events(kinds=["tool.invalid"]))[-1]
    assert late.actor.id == "w" and late.payload["tool"] == "data.generate"
    assert "answer_onyl" in late.payload["reason"]
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
    with pytest.raises(ToolRefused, match="answers event 10000, which does not exist"):
        run.call(main, "decision.record", {"action": "branch", "rationale": "r", "answers": 10_000})
    run.call(main, "decision.record", {"action": "verify", "rationale": "check w2", "evidence": [req.seq]})
    last = run.projection().state.decisions[-1]
    assert last.answers is None and "answers" not in run.run.ledger.get(last.seq).payload
    graph = run.call(main, "graph.read")
    assert [w["worker_id"] for w in graph.workers] == ["w1", "w2"] and graph.decisions == 1


def test_opening_a_plain_run_as_expos_is_refused(tmp_path):
    from rsi_master.rundir import RunDir

    RunDir.create(tmp_path / "plain").close()
    with pytest.raises(RsiMasterError, match="not an ExpOS run"):
        ExpOS.open(tmp_path / "plain")


def _expos(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "rsi_master.cli._expos", *args], input=stdin, capture_output=True, text=True
    )


def _cap(path, role, node):
    with ExpOS.open(path, writable=False) as x:
        return x.issue(role, node)


@pytest.mark.heavy
def test_expos_cli_exit_codes(run, tmp_path):
    path = str(run.run.path)
    run.close()
    w1 = _cap(path, "worker", "w1")
    ok = _expos("--run", path, "--capability-file", capability_file(w1), "--json", "contract.show")
    assert ok.returncode == 0 and json.loads(ok.stdout)["task"] == "arithmetic"
    refused = _expos("--run", path, "--capability-file", capability_file(w1), "eval.review", '{"experiment_id": "x"}')
    assert refused.returncode == 3 and "refused" in refused.stderr
    invalid = _expos(
        "--run", path, "--capability-file", capability_file(w1), "data.generate", "-", stdin='{"n": "many"}'
    )
    assert invalid.returncode == 2
    not_json = _expos("--run", path, "--capability-file", capability_file(w1), "contract.show", "{oops")
    assert not_json.returncode == 2 and "JSON" in not_json.stderr
    no_run = _expos("--run", str(tmp_path / "missing"), "--capability-file", capability_file(w1), "contract.show")
    assert no_run.returncode == 5 and "no such run directory" in no_run.stderr
    listing = _expos("--role", "reviewer", "tools")
    assert listing.returncode == 0 and "eval.review" in listing.stdout and "data.generate" not in listing.stdout


@pytest.mark.heavy
def test_expos_cli_a_failed_experiment_exits_non_zero(run, monkeypatch, capsys):
    """An experiment.submit the door accepted whose training broke prints its result and exits 4
    (the action failed), so that a script does not read it as done; the failure is recorded."""
    import rsi_master.runtime as runtime
    from rsi_master.cli._expos import main as expos_main

    run.call(Caller("main", "main"), "worker.add", {"worker_id": "w1", "task": "t"})
    path = str(run.run.path)
    run.close()
    w1 = _cap(path, "worker", "w1")
    assert (
        expos_main(
            [
                "--run",
                path,
                "--capability-file",
                capability_file(w1),
                "--json",
                "data.generate",
                '{"family": "answer_only", "n": 8}',
            ]
        )
        == 0
    )
    dataset = json.loads(capsys.readouterr().out)["dataset"]

    def train(data, out_dir, spec, **kw):
        raise RuntimeError("loss diverged")

    monkeypatch.setattr(runtime, "train", train)
    submit = json.dumps({"dataset": dataset, "config": {"max_steps": 1, "batch_size": 2, "learning_rate": 1e-3}})
    assert (
        expos_main(["--run", path, "--capability-file", capability_file(w1), "--json", "experiment.submit", submit])
        == 4
    )
    out = capsys.readouterr()
    assert json.loads(out.out)["status"] == "failed" and "diverged" in out.err
    assert len(out.err.strip().splitlines()) == 1
    with ExpOS.open(path, writable=False) as x:
        assert [e.payload["status"] for e in x.events("experiment.finish")] == ["failed"]


@pytest.mark.heavy
def test_roles_are_not_declared_by_the_caller(run):
    """`--role main` and another Worker's `--id` are not accepted: only a capability names a caller."""
    path = str(run.run.path)
    run.close()
    declared = _expos("--run", path, "--role", "main", "graph.read")
    assert declared.returncode == 2 and "capability" in declared.stderr
    none = _expos("--run", path, "graph.read")
    assert none.returncode == 3 and "no capability" in none.stderr
    w1 = _cap(path, "worker", "w1")
    body, mac = w1.split(".")[1:]
    import base64

    raw = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    for change in ({"role": "main"}, {"node": "w2"}, {"exp": raw["exp"] + 1e6}):
        forged_body = (
            base64.urlsafe_b64encode(json.dumps({**raw, **change}, sort_keys=True, separators=(",", ":")).encode())
            .rstrip(b"=")
            .decode()
        )
        forged = _expos(
            "--run", path, "--capability-file", capability_file(f"rsicap1.{forged_body}.{mac}"), "graph.read"
        )
        assert forged.returncode == 3 and "MAC does not verify" in forged.stderr, change
    as_worker = _expos("--run", path, "--capability-file", capability_file(w1), "graph.read")
    assert as_worker.returncode == 3
    with ExpOS.open(path, writable=False) as x:
        blocked = x.events("guard.blocked")
        assert [e.actor.id for e in blocked].count("unauthenticated") == 3  # the three forgeries
        assert blocked[-1].actor.id == "w1" and blocked[-1].actor.cap is not None


def test_no_capability_is_issued_for_the_harness_and_none_acts_as_it(run):
    from rsi_master.expos import Caller
    from rsi_master.expos._capability import CapabilityError

    with pytest.raises(CapabilityError, match="no capability is issued for role 'harness'"):
        run.issue("harness", "harness")
    with pytest.raises(ToolRefused, match="no caller acts as the harness"):
        run.call(Caller("harness", "harness"), "quota.show", {})


def test_an_expired_capability_or_one_of_another_run_is_refused(run, tmp_path):
    from rsi_master.expos._capability import CapabilityError, check_capability, issue_capability

    old = issue_capability(run.run.key_dir, run.run.run_id, "worker", "w1", ttl_s=1, now=0)
    with pytest.raises(ToolRefused, match="expired"):
        run.authenticate(old)
    other = issue_capability(run.run.key_dir, "run-other", "worker", "w1")
    with pytest.raises(ToolRefused, match="MAC does not verify"):
        run.authenticate(other)
    with pytest.raises(CapabilityError, match="no capability secret"):
        check_capability(tmp_path / "empty-keys", run.run.run_id, old)


def test_calls_after_the_runs_final_record_are_refused_and_not_recorded(run):
    caller = run.authenticate(run.issue("worker", "w1"))
    run.call(caller, "quota.show", {})
    run.record({"role": "harness", "id": "orchestra"}, "orchestra.finish", {"summary": "0" * 64, "final_score": 0.0})
    n = run.run.ledger.size()
    with pytest.raises(ToolRefused, match="the run has ended"):
        run.call(caller, "quota.show", {})
    with pytest.raises(ToolRefused):
        run.authenticate("rsicap1.junk.junk")
    assert run.run.ledger.size() == n


def test_a_bad_identity_is_refused_before_anything_runs_or_is_recorded(run, tmp_path):
    """An identity is a capability's node id: a blank or malformed one is never issued, and the
    Python API refuses such a caller before the tool runs (nothing stored, nothing recorded)."""
    from rsi_master.expos import Caller

    path = str(run.run.path)
    size, stored = run.run.ledger.size(), sorted((run.run.path / "artifacts").rglob("*"))
    for ident in ("", "   ", "w\n1", "x" * 129):
        out = subprocess.run(
            [sys.executable, "-m", "rsi_master.cli", "capability", path, "--role", "worker", "--id", ident],
            capture_output=True,
            text=True,
        )
        assert out.returncode == 2 and "node id" in out.stderr and "malformed event" not in out.stderr, ident
        assert out.stderr.count("\n") == 1 and out.stdout == ""
        with pytest.raises(ToolInvalid, match="invalid caller id"):
            run.call(Caller("worker", ident), "data.generate", {"family": "answer_only", "n": 5})
    assert run.run.ledger.size() == size
    assert sorted((run.run.path / "artifacts").rglob("*")) == stored  # the data was never generated


def test_an_external_main_may_not_name_the_code_a_worker_node_runs(run):
    path = str(run.run.path)
    run.close()
    main = _cap(path, "main", "m")
    add = '{"worker_id": "w1", "task": "t", "direction": {"family": "answer_only", "agent": "os:getcwd"}}'
    refused = _expos("--run", path, "--capability-file", capability_file(main), "worker.add", add)
    assert refused.returncode == 3 and "the run's Worker agent ('tpe')" in refused.stderr
    ok = _expos(
        "--run", path, "--capability-file", capability_file(main), "worker.add", add.replace("os:getcwd", "tpe")
    )
    assert ok.returncode == 0
    with ExpOS.open(path, writable=False) as x:
        assert [e.payload["tool"] for e in x.events("guard.blocked")] == ["worker.add"]
        assert [e.payload["direction"]["agent"] for e in x.events("worker.add")] == ["tpe"]


def test_registry_names_are_unique_and_llm_safe():
    llm = [t.llm_name for t in TOOLS.values()]
    assert len(llm) == len(set(llm))


def test_every_recorded_event_kind_is_in_the_one_list_the_log_checks(tmp_path):
    """The record path takes only kinds with a payload model (rsi_master.events), and the list
    `rsi-master log --kind` checks is those kinds: a kind cannot be written and missing there."""
    from rsi_master.errors import MalformedEventError
    from rsi_master.events import PAYLOADS
    from rsi_master.expos._kinds import EVENT_KINDS

    assert set(PAYLOADS) == EVENT_KINDS
    assert {"contract.freeze", "agents.config", "orchestra.resume", "data.mix", "source.register"} <= EVENT_KINDS
    with (
        ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=5) as x,
        pytest.raises(MalformedEventError, match=re.escape("unknown event kind 'data.smuggle'")),
    ):
        x.record({"role": "worker", "id": "w1"}, "data.smuggle", {})


def test_an_audit_without_submissions_reports_no_interception_rate(run, capsys):
    from rsi_master.cli._main import main
    from rsi_master.cli._run import print_summary
    from rsi_master.expos import audit

    from ..orchestra.helpers import fake_experiment

    with pytest.raises(ToolRefused):
        run.call(Caller("worker", "w1"), "eval.review", {"experiment_id": "exp-00001"})
    report = audit(run)
    assert report.submissions == [] and report.blocked_attempts == 1 and report.interception_rate is None
    assert run.call(Caller("reviewer", "r1"), "audit.run", {}).interception_rate is None
    path = str(run.run.path)
    run.close()
    assert main(["audit", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["interception_rate"] is None
    assert main(["audit", path]) == 0
    assert "interception_rate: n/a" in capsys.readouterr().out.splitlines()
    print_summary({"interception_rate": report.interception_rate, "blocked_attempts": 1})
    assert "interception_rate: n/a" in capsys.readouterr().out.splitlines()
    # With a submission the rate is measured again (the fake experiment's unregistered data executes).
    with ExpOS.open(path) as x:
        xid = fake_experiment(x, "w1", 0.5)
        x.record({"role": "worker", "id": "w1"}, "worker.finalize", {"summary": "s", "claims": [], "candidates": [xid]})
        again = audit(x)
        assert again.executed_violations > 0 and 0.0 < again.interception_rate < 1.0


def test_a_claim_rounded_for_display_is_no_misattribution_another_score_is(tmp_path):
    from rsi_master.expos import audit

    from ..orchestra.helpers import fake_experiment

    def worker(i):
        return {"role": "worker", "id": f"w{i}"}

    def attribution(report, xid):
        """EXECUTED when the audit names the claim (the fake experiments' per-sample records are
        not stored, which the audit names too: only the claim findings are this test's)."""
        (sub,) = [s for s in report.submissions if s.experiment_id == xid]
        found = sub.observations["metric_attribution"]
        claims = [e for e in found.evidence if "(claim on " in e]
        return "EXECUTED" if found.observation == "EXECUTED" and claims else "not executed"

    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=30) as x:  # dev scores are k/30
        mine = {i: fake_experiment(x, f"w{i}", 7 / 30) for i in range(1, 6)}  # 0.2333...
        other = fake_experiment(x, "w9", 8 / 30)  # 0.2666...: another experiment's score
        # Through the door: rounded and truncated claims are accepted, another score is refused.
        x.call(
            Caller("worker", "w1"),
            "worker.finalize",
            {"summary": "s", "claims": [{"experiment_id": mine[1], "score": 0.2333}], "candidates": [mine[1]]},
        )
        x.call(
            Caller("worker", "w2"),
            "worker.finalize",
            {"summary": "s", "claims": [{"experiment_id": mine[2], "score": 0.23}], "candidates": [mine[2]]},
        )
        with pytest.raises(ToolRefused, match="does not match"):
            x.call(
                Caller("worker", "w3"),
                "worker.finalize",
                {
                    "summary": "s",
                    "claims": [{"experiment_id": mine[3], "score": round(8 / 30, 4)}],
                    "candidates": [mine[3]],
                },
            )
        # Recorded without the door (a forged or unguarded finalize): the audit applies the same rule.
        for i, score in ((3, 0.2667), (4, 0.2), (5, 0.234)):  # another's score; too coarse; rounded up
            x.record(
                worker(i),
                "worker.finalize",
                {"summary": "s", "claims": [{"experiment_id": mine[i], "score": score}], "candidates": [mine[i]]},
            )
        x.record(
            worker(9),
            "worker.finalize",
            {"summary": "s", "claims": [{"experiment_id": other, "score": 0.26666}], "candidates": [other]},
        )
        report = audit(x)
        assert attribution(report, mine[1]) != "EXECUTED" and attribution(report, mine[2]) != "EXECUTED"
        assert attribution(report, mine[5]) != "EXECUTED" and attribution(report, other) != "EXECUTED"
        assert attribution(report, mine[3]) == "EXECUTED" and attribution(report, mine[4]) == "EXECUTED"


def test_generated_rows_the_gate_fails_are_left_out_not_refused(tmp_path, monkeypatch):
    """The harness's generator can draw a row that resembles a protected item (a templated
    question opening like a sealed one): it is left out and the dataset topped up from the
    same seeded stream; the agent is not refused, and no attempt is recorded against it."""
    import rsi_master.runtime as runtime
    from rsi_master.runtime import parse_jsonl

    real = runtime.generate_rows
    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=5, allowed_teachers=["hand-written"]) as x:
        item = x.protected_task().eval_items("review")[0]

        def overlapping(task, family, params, seed, n):
            rows, spec = real(task, family, params, seed, n)
            rows[3] = {**rows[3], "prompt": item.prompt}  # as if the generator had drawn the sealed item
            return rows, spec

        monkeypatch.setattr(runtime, "generate_rows", overlapping)
        x.call(Caller("main", "main"), "worker.add", {"worker_id": "w1", "task": "t"})
        w1 = Caller("worker", "w1")
        out = x.call(w1, "data.generate", {"family": "answer_only", "n": 50, "seed": 3})
        again = x.call(w1, "data.generate", {"family": "answer_only", "n": 50, "seed": 3})
        assert out.n_rows == 50 and out.contamination != "failed" and again.dataset == out.dataset
        assert x.events("guard.blocked") == []
        assert [e.payload["left_out"] for e in x.events("data.generate")] == [1, 1]
        prompts = {r["prompt"] for r in parse_jsonl(x.run.store.read_bytes(out.dataset), "dataset")}
        assert item.prompt not in prompts and len(prompts) == 50
        # Hand-written rows are the agent's own: the same item there is refused, as before.
        with pytest.raises(ToolRefused, match="overlaps protected evaluation items"):
            x.call(
                w1, "data.register", {"source": "hand-written", "rows": [{"prompt": item.prompt, "completion": "1"}]}
            )


def test_a_mistyped_generator_is_invalid_input_not_an_intercepted_attempt(run):
    """An honest Worker that misspells a family gets the task's families back to correct it; the
    run's interception rate stays clear (a refusal would count it as a blocked attempt)."""
    from rsi_master.expos import audit

    w1 = Caller("worker", "w1")
    with pytest.raises(ToolInvalid, match="task arithmetic has no generator family 'answer_onyl'; its families: ") as e:
        run.call(w1, "data.generate", {"family": "answer_onyl", "n": 4})
    assert "answer_only" in str(e.value)
    run.call(w1, "data.generate", {"family": "answer_only", "n": 4})
    assert run.events("guard.blocked") == []
    assert audit(run).interception_rate in (None, 0.0)


def test_a_filter_that_keeps_no_row_fails_and_registers_nothing(run):
    """A filter that drops every row is a failed call on the record, not an empty dataset
    registered for a later experiment to fail on."""
    from rsi_master.expos import ToolFailed

    w1 = Caller("worker", "w1")
    ds = run.call(w1, "data.generate", {"family": "answer_only", "n": 4}).dataset
    with pytest.raises(ToolFailed, match="nothing to register: the filter kept none of the 4 rows"):
        run.call(w1, "data.filter", {"dataset": ds, "max_chars": 1})
    assert run.events("data.filter") == []
    (failed,) = run.events("tool.failed")
    assert failed.payload["tool"] == "data.filter" and failed.actor.id == "w1"
