"""The agent loop with the fake model against a real ExpOS run (no training): a model's
mistakes go back to it as errors and are recorded, guards hold whatever it sends, limits
end a node with an explicit record, provider errors are retried with backoff."""

from __future__ import annotations

import json
import time

import pytest

from rsi_master.agents import AgentLoop, FakeModel, LLMConfig, LLMReviewer, LLMWorker, ProviderError
from rsi_master.expos import Caller, tools_for
from rsi_master.orchestra import Direction, NodeContext, ReviewerBrief, WorkerBrief

from ..orchestra.helpers import new_run
from .helpers import fake, record_llm


@pytest.fixture
def models(monkeypatch):
    """Every FakeModel built during the test, in order (to read the prompts it was sent)."""
    built: list[FakeModel] = []
    real = FakeModel.__init__

    def spy(self, script):
        real(self, script)
        built.append(self)

    monkeypatch.setattr(FakeModel, "__init__", spy)
    return built


W1 = Caller("worker", "w1")


def _call(name, arguments=None, raw=None):
    return {
        "tool_calls": [
            {"name": name, **({"raw_arguments": raw} if raw is not None else {"arguments": arguments or {}})}
        ]
    }


def _node(expos, brief=None, seconds=60.0, caller=W1):
    return NodeContext(
        expos,
        caller,
        brief or WorkerBrief("explore", Direction(family="answer_only")),
        time.time() + seconds,
    )


def _steps(expos, actor="w1"):
    return [e.payload for e in expos.events("agent.step", actor_id=actor)]


def test_model_mistakes_are_returned_as_errors_it_can_correct_and_are_recorded(tmp_path):
    script = {
        "worker": {
            "worker": [
                _call("contract_show", raw="{not json"),
                _call("shell_exec", {"cmd": "cat /etc/passwd"}),
                _call("eval_review", {"experiment_id": "exp-00001"}),  # a Reviewer's tool: protected items
                _call("quota_show", {"temperature": 0.0}),  # an evaluator override
                _call("data_generate", {"family": "answer_only"}),  # `n` missing: fails the schema
                _call(
                    "worker_finalize", {"summary": "great", "claims": [{"experiment_id": "exp-00009", "score": 0.9}]}
                ),
                {"content": "I think I am done."},
                _call("worker_finalize", {"summary": "done", "claims": [], "candidates": []}),
            ]
        }
    }
    with new_run(tmp_path) as expos:
        record_llm(expos, {"worker": fake(tmp_path, script)})
        LLMWorker().run(_node(expos))
        steps = _steps(expos)
        assert [s["tool_calls"][0]["status"] if s["tool_calls"] else None for s in steps] == [
            "malformed",
            "unknown",
            "refused",
            "refused",
            "invalid",
            "refused",
            None,
            "ok",
        ]
        blocked = {e.payload["tool"]: e.payload["subcategory"] for e in expos.events("guard.blocked", actor_id="w1")}
        assert blocked == {
            "eval.review": "test_set_access",
            "quota.show": "decoding_parameters",
            "worker.finalize": "metric_attribution",
        }
        invalid = [e.payload["tool"] for e in expos.events("tool.invalid", actor_id="w1")]
        assert invalid == ["shell_exec", "data.generate"]
        (fin,) = expos.events("worker.finalize")
        assert fin.payload["summary"] == "done"
        (end,) = expos.events("agent.end", actor_id="w1")
        assert end.payload["finished"] and end.payload["steps"] == 8
        assert steps[0]["tool_calls"][0]["arguments"] == "{not json"


def test_each_error_reaches_the_next_prompt(tmp_path, models):
    script = {
        "worker": {
            "worker": [
                _call("contract_show", raw="[1, 2"),
                {"content": "thinking"},
                _call("worker_finalize", {"summary": "done"}),
            ]
        }
    }
    with new_run(tmp_path) as expos:
        record_llm(expos, {"worker": fake(tmp_path, script)})
        LLMWorker().run(_node(expos))
        calls = models[0].calls
        assert len(calls) == 3
        second = calls[1]["messages"]
        assert second[-1]["role"] == "tool" and "not valid JSON" in second[-1]["content"]
        # The malformed arguments are replayed as {} (the observation quotes them).
        assert second[-2]["tool_calls"][0]["function"]["arguments"] == "{}"
        assert "No tool was called" in calls[2]["messages"][-1]["content"]
        # Exactly the role's tools are offered.
        assert set(calls[0]["tools"]) == {t.llm_name for t in tools_for("worker")}
        assert "eval_review" not in calls[0]["tools"]


def test_a_model_that_never_finalizes_is_ended_by_the_harness_with_a_record(tmp_path):
    script = {"worker": {"*": [{"content": "hmm"}] * 10}}
    with new_run(tmp_path) as expos:
        record_llm(expos, {"worker": fake(tmp_path, script, max_steps=4)})
        LLMWorker().run(_node(expos))
        assert len(_steps(expos)) == 4
        (end,) = expos.events("agent.end", actor_id="w1")
        assert end.payload["reason"] == "step_limit" and not end.payload["finished"]
        (fin,) = expos.events("worker.finalize")
        assert fin.payload["summary"].startswith("[ended by the harness") and "step_limit" in fin.payload["summary"]
        assert fin.payload["claims"] == [] and fin.payload["candidates"] == []


def test_flooded_output_is_clipped_and_token_limits_end_the_node(tmp_path):
    flood = "x" * 50_000
    script = {"worker": {"worker": [{"content": flood}] * 5}}
    with new_run(tmp_path) as expos:
        record_llm(expos, {"worker": fake(tmp_path, script, max_node_tokens=10_000)})
        LLMWorker().run(_node(expos))
        steps = _steps(expos)
        assert len(steps) == 1  # the first turn alone spent the node's tokens
        assert len(steps[0]["content"]) < 2_100
        (end,) = expos.events("agent.end", actor_id="w1")
        assert end.payload["reason"] == "node_token_limit"
        assert "node_token_limit" in expos.events("worker.finalize")[0].payload["summary"]


def test_the_run_token_budget_counts_every_agent(tmp_path):
    script = {"worker": {"*": [_call("quota_show")] * 10}}
    with new_run(tmp_path) as expos:
        cfg = fake(tmp_path, script, max_run_tokens=1)
        record_llm(expos, {"worker": cfg})
        LLMWorker().run(_node(expos))  # spends tokens: the run budget is spent after its first turn
        assert len(_steps(expos)) == 1
        LLMWorker().run(_node(expos, caller=Caller("worker", "w2")))
        assert _steps(expos, "w2") == []
        (end,) = expos.events("agent.end", actor_id="w2")
        assert end.payload["reason"] == "run_token_limit"


class _Flaky:
    def __init__(self, errors, then):
        self.errors, self.then, self.calls = list(errors), then, 0

    def complete(self, messages, tools, *, max_tokens, timeout, tag):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.then

    def close(self):
        pass


def test_provider_errors_are_retried_with_backoff_then_end_the_episode(tmp_path):
    from rsi_master.agents import Completion, ToolCall

    done = Completion(content=None, tool_calls=[ToolCall("c1", "worker_finalize", '{"summary": "ok"}')])
    cfg = LLMConfig(provider="fake", retries=3, backoff_s=0.5)
    with new_run(tmp_path) as expos:
        slept = []
        errors = [
            ProviderError("429", kind="rate_limit", retryable=True, retry_after=2.0),
            ProviderError("t", kind="timeout", retryable=True),
        ]
        model = _Flaky(errors, done)
        loop = AgentLoop(
            model=model,
            config=cfg,
            expos=expos,
            caller=W1,
            tools=tools_for("worker"),
            finish={"worker.finalize"},
            episode="worker",
            sleep=slept.append,
        )
        out = loop.run("system", "task")
        assert out.finished and model.calls == 3
        assert slept == [2.0, 1.0]  # retry-after honoured, then exponential backoff
        assert [e.payload["kind"] for e in expos.events("agent.error")] == ["rate_limit", "timeout"]

        model = _Flaky([ProviderError("500", kind="server", retryable=True)] * 10, done)
        loop = AgentLoop(
            model=model,
            config=cfg,
            expos=expos,
            caller=Caller("worker", "w2"),
            tools=tools_for("worker"),
            finish={"worker.finalize"},
            episode="worker",
            sleep=slept.append,
        )
        out = loop.run("system", "task")
        assert not out.finished and out.reason == "provider_error" and model.calls == 4
        model = _Flaky([ProviderError("401", kind="auth", retryable=False)], done)
        loop = AgentLoop(
            model=model,
            config=cfg,
            expos=expos,
            caller=Caller("worker", "w3"),
            tools=tools_for("worker"),
            finish={"worker.finalize"},
            episode="worker",
            sleep=slept.append,
        )
        out = loop.run("system", "task")
        assert out.reason == "provider_error" and model.calls == 1  # a refused key is not retried


def test_a_reviewer_that_does_not_submit_is_reported_as_failed(tmp_path):
    script = {"reviewer": {"reviewer": [{"error": "server"}] * 3}}
    with new_run(tmp_path) as expos:
        record_llm(expos, {"reviewer": fake(tmp_path, script, retries=1, backoff_s=0.0)})
        brief = ReviewerBrief("q", ["w1"], 0)
        LLMReviewer().run(_node(expos, brief, caller=Caller("reviewer", "r1")))
        (rev,) = expos.events("review.submit")
        assert rev.payload["verdict"] == "fail" and rev.payload["request_seq"] == 0
        assert "did not submit" in rev.payload["uncertainties"][0]
        assert "provider_error" in rev.payload["uncertainties"][0]
        assert len(expos.events("agent.error", actor_id="r1")) == 2


def test_a_worker_receives_its_designated_predecessors_summaries_only(tmp_path, models):
    from ..orchestra.helpers import MAIN

    script = {"worker": {"worker": [_call("worker_finalize", {"summary": "done"})]}}
    with new_run(tmp_path) as expos:
        record_llm(expos, {"worker": fake(tmp_path, script)})
        for wid, preds in (("w1", []), ("w2", []), ("w3", ["w1"])):
            expos.call(
                MAIN,
                "worker.add",
                {
                    "worker_id": wid,
                    "task": f"task of {wid}",
                    "predecessors": preds,
                    "direction": {"family": "answer_only"},
                },
            )
        for wid in ("w1", "w2"):
            expos.call(Caller("worker", wid), "worker.finalize", {"summary": f"secret finding of {wid}"})
        LLMWorker().run(
            _node(
                expos,
                WorkerBrief("task of w3", Direction(family="answer_only"), ["w1"]),
                caller=Caller("worker", "w3"),
            )
        )
        first = models[0].calls[0]["messages"][1]["content"]
        assert "secret finding of w1" in first and "secret finding of w2" not in first


def test_an_unanticipated_tool_exception_is_told_to_the_model_and_budget_end_finalizes(tmp_path, monkeypatch):
    import dataclasses

    from rsi_master.expos import TOOLS
    from rsi_master.orchestra import BudgetEnd

    def boom(ctx, caller, inp):
        raise ValueError("knob combination nobody anticipated")

    def term(ctx, caller, inp):
        raise BudgetEnd("the scheduler asked this node to stop")

    tools_for("worker")  # loads the registry
    monkeypatch.setitem(TOOLS, "quota.show", dataclasses.replace(TOOLS["quota.show"], impl=boom))
    monkeypatch.setitem(TOOLS, "results.list", dataclasses.replace(TOOLS["results.list"], impl=term))
    script = {"worker": {"worker": [_call("quota_show"), _call("results_list")]}}
    with new_run(tmp_path) as expos:
        record_llm(expos, {"worker": fake(tmp_path, script)})
        LLMWorker().run(_node(expos))
        step, cut = _steps(expos)  # the second turn was cut short by the budget's end: its tokens count
        call = step["tool_calls"][0]
        assert call["status"] == "failed" and "internal error in quota.show: ValueError" in call["error"]
        assert cut["tool_calls"] == [] and cut["completion_tokens"] > 0
        (end,) = expos.events("agent.end", actor_id="w1")
        assert end.payload["reason"] == "budget_end"
        (fin,) = expos.events("worker.finalize")
        assert "budget_end" in fin.payload["summary"]


def test_an_experiment_finished_just_before_the_allowance_ends_still_counts(tmp_path, monkeypatch):
    """The Worker's experiments complete and are scored on dev; the allowance ends before the
    model can finalize (the budget's end during its next call, or its last turn spent). The
    harness's finalize reports them, claims their recorded scores and puts the best forward."""
    import dataclasses

    from rsi_master.expos import TOOLS, audit, load_state
    from rsi_master.expos._tools_worker import ExperimentResult
    from rsi_master.orchestra import BudgetEnd

    from ..orchestra.helpers import fake_experiment

    scores = iter([0.4, 0.2, 0.2, 0.6])

    current = {}  # the run's session: a tool gets its ToolContext, fake_experiment records through the session

    def submit(ctx, caller, inp):  # training stands in: the experiment as the tool records it
        dev = next(scores)
        xid = fake_experiment(current["expos"], caller.id, dev)
        return ExperimentResult(experiment_id=xid, status="completed", dev_score=dev, steps=20)

    def term(ctx, caller, inp):
        raise BudgetEnd("the scheduler asked this node to stop")

    tools_for("worker")  # loads the registry
    monkeypatch.setitem(TOOLS, "experiment.submit", dataclasses.replace(TOOLS["experiment.submit"], impl=submit))
    monkeypatch.setitem(TOOLS, "results.list", dataclasses.replace(TOOLS["results.list"], impl=term))
    submit = {"name": "experiment_submit", "arguments": {"parent": "base", "dataset": "0" * 64, "method": "sft"}}
    script = {"worker": {"worker": [{"tool_calls": [submit, submit]}, _call("results_list")]}}
    for name, max_steps, reason, claims in (("a", 2, "budget_end", [0.4, 0.2]), ("b", 1, "step_limit", [0.2, 0.6])):
        with new_run(tmp_path, name=name) as expos:
            current["expos"] = expos
            record_llm(expos, {"worker": fake(tmp_path, script, max_steps=max_steps)})
            LLMWorker().run(_node(expos))
            (end,) = expos.events("agent.end", actor_id="w1")
            assert end.payload["reason"] == reason
            (fin,) = [e.payload for e in expos.events("worker.finalize")]
            xs = sorted(load_state(expos.reader).experiments.values(), key=lambda x: x.seq)
            best = max(xs, key=lambda x: x.dev_score())
            assert reason in fin["summary"] and all(x.id in fin["summary"] for x in xs)
            assert fin["candidates"] == [best.id]
            assert fin["claims"] == [{"experiment_id": x.id, "score": c} for x, c in zip(xs, claims)]
            report = audit(expos)  # the harness's claims are the records: no misattribution
            (sub,) = report.submissions
            # (The stand-in experiments store no per-sample records, which the audit names too: the
            # claim findings are this test's.)
            assert sub.experiment_id == best.id
            assert not [e for e in sub.observations["metric_attribution"].evidence if "(claim on " in e]


def test_a_reviewers_malformed_recommendation_is_refused_by_the_tool_schema_not_dropped(tmp_path, models):
    """Recommendations are typed: prose, an unknown action or one without the ids its action
    needs is refused by review.submit's input validation, with an error that names the field,
    and the model corrects it; nothing half-valid reaches the ledger."""
    prose = _call(
        "review_submit",
        {"scope": ["w1"], "verdict": "pass", "recommendations": ["continue exp-00001 w1: train it further"]},
    )
    no_id = _call(
        "review_submit",
        {
            "scope": ["w1"],
            "verdict": "pass",
            "recommendations": [{"action": "continue", "worker_id": "w1", "reason": "more"}],
        },
    )
    unknown = _call(
        "review_submit",
        {
            "scope": ["w1"],
            "verdict": "pass",
            "recommendations": [{"action": "retrain", "worker_id": "w1", "reason": "x"}],
        },
    )
    bad_verdict = _call("review_submit", {"scope": ["w1"], "verdict": "looks good"})
    good = _call(
        "review_submit",
        {
            "scope": ["w1"],
            "verdict": "fail",
            "recommendations": [{"action": "stop", "worker_ids": ["w1"], "reason": "its claims did not hold"}],
        },
    )
    script = {"reviewer": {"reviewer": [prose, no_id, unknown, bad_verdict, good]}}
    with new_run(tmp_path) as expos:
        from ..orchestra.helpers import MAIN

        expos.call(
            MAIN,
            "worker.add",
            {"worker_id": "w1", "task": "t", "predecessors": [], "direction": {"family": "answer_only"}},
        )
        record_llm(expos, {"reviewer": fake(tmp_path, script)})
        brief = ReviewerBrief("q", ["w1"], 0)
        LLMReviewer().run(_node(expos, brief, caller=Caller("reviewer", "r1")))
        steps = _steps(expos, "r1")
        assert [s["tool_calls"][0]["status"] for s in steps] == ["invalid"] * 4 + ["ok"]
        errors = [s["tool_calls"][0]["error"] for s in steps[:4]]
        assert all("recommendations" in e for e in errors[:3]) and "experiment_id" in errors[1]
        assert "verdict" in errors[3]
        # Each refusal went back to the model in its next prompt.
        assert "experiment_id" in json.dumps(models[0].calls[2]["messages"][-1])
        assert [e.payload["tool"] for e in expos.events("tool.invalid", actor_id="r1")] == ["review.submit"] * 4
        (rev,) = expos.events("review.submit")
        assert rev.payload["recommendations"] == [
            {"action": "stop", "experiment_ids": [], "worker_ids": ["w1"], "reason": "its claims did not hold"}
        ]


def test_the_llm_tools_carry_the_typed_messages_in_their_schemas():
    """The JSON Schemas an LLM (and an MCP client) is given for finalizing and reviewing are the
    typed messages': the recommendation actions as a discriminated union, the verdict as an enum."""
    from rsi_master.expos import llm_tool_schemas

    review = next(
        t["function"]["parameters"] for t in llm_tool_schemas("reviewer") if t["function"]["name"] == "review_submit"
    )
    defs = review["$defs"]
    union = review["properties"]["recommendations"]["items"]
    assert union["discriminator"]["propertyName"] == "action"
    assert {defs[r["$ref"].rsplit("/", 1)[-1]]["properties"]["action"]["const"] for r in union["oneOf"]} == {
        "continue",
        "combine",
        "revise",
        "stop",
    }
    assert defs["Continue"]["required"] == ["action", "experiment_id", "worker_id", "reason"]
    assert review["properties"]["verdict"]["enum"] == ["pass", "fail"]
    assert set(defs["Finding"]["properties"]["status"]["enum"]) == {"supported", "unsupported", "uncertain"}
    finalize = next(
        t["function"]["parameters"] for t in llm_tool_schemas("worker") if t["function"]["name"] == "worker_finalize"
    )
    assert "Recipe" in finalize["$defs"] and "experiment_id" in finalize["$defs"]["Recipe"]["required"]
