"""The real wire path: the official openai SDK talks to a chat-completions server on
loopback that answers from a script (malformed tool calls, rate limits, timeouts, 5xx)."""

from __future__ import annotations

import json
import time

import pytest

from rsi_master.agents import LLMConfig, LLMWorker, ProviderError
from rsi_master.agents._openai import OpenAIChatModel
from rsi_master.expos import Caller, ExpOS, tools_for
from rsi_master.orchestra import Direction, NodeContext, WorkerBrief

from ..orchestra.helpers import new_run
from .helpers import ChatServer, completion, record_llm

KEY = "RSI_TEST_KEY"


def _cfg(server: ChatServer, **kw) -> LLMConfig:
    return LLMConfig(provider="openai", base_url=server.url, model="test-model", api_key_env=KEY, backoff_s=0.01, **kw)


def _worker(expos, seconds=120.0):
    return NodeContext(
        expos,
        Caller("worker", "w1"),
        WorkerBrief("explore", Direction(family="answer_only")),
        time.time() + seconds,
    )


def test_worker_over_the_wire_recovers_from_malformed_calls_rate_limits_and_timeouts(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY, "sk-test")
    replies = [
        completion(calls=[("contract_show", '{"oops": ')]),
        {"status": 429, "headers": {"retry-after": "0"}},
        completion(
            "checking my budget", calls=[("quota_show", "{}"), ("eval_review", '{"experiment_id": "exp-00001"}')]
        ),
        {"delay": 1.5, "body": completion(calls=[("quota_show", "{}")])},
        completion(calls=[("data_generate", '{"family": "answer_only", "n": 4, "temperature": 0.7}')]),
        completion(calls=[("worker_finalize", '{"summary": "done", "claims": [], "candidates": []}')]),
    ]
    with ChatServer(replies) as server, new_run(tmp_path) as expos:
        record_llm(expos, {"worker": _cfg(server, timeout_s=0.5)})
        LLMWorker().run(_worker(expos))
        reqs = server.requests
    assert len(reqs) == 6
    for r in reqs:
        assert r["path"] == "/v1/chat/completions"
        assert r["headers"]["authorization"] == "Bearer sk-test"
        assert r["body"]["model"] == "test-model" and r["body"]["max_tokens"] == 2048
        assert {t["function"]["name"] for t in r["body"]["tools"]} == {t.llm_name for t in tools_for("worker")}
    # The retry after the 429 resends the same conversation, which carries the JSON error.
    assert reqs[1]["body"]["messages"] == reqs[2]["body"]["messages"]
    last = reqs[2]["body"]["messages"][-1]
    assert last["role"] == "tool" and "not valid JSON" in last["content"]
    # The refusal of another role's tool reached the model; so did the override refusal.
    tool_msgs = [m["content"] for m in reqs[5]["body"]["messages"] if m["role"] == "tool"]
    assert any(c.startswith("refused") and "eval.review" in c for c in tool_msgs)
    assert any("temperature" in c and "refused" in c for c in tool_msgs)
    with ExpOS.open(tmp_path / "run", writable=False) as expos:
        errors = [e.payload["kind"] for e in expos.events("agent.error")]
        assert errors == ["rate_limit", "timeout"]
        steps = [e.payload for e in expos.events("agent.step")]
        assert [c["status"] for s in steps for c in s["tool_calls"]] == ["malformed", "ok", "refused", "refused", "ok"]
        assert sum(s["prompt_tokens"] for s in steps) == 100 * len(steps)
        blocked = sorted(e.payload["subcategory"] for e in expos.events("guard.blocked"))
        assert blocked == ["decoding_parameters", "test_set_access"]
        assert expos.events("worker.finalize")[0].payload["summary"] == "done"


def test_a_provider_that_keeps_failing_ends_the_node_not_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY, "sk-test")
    with ChatServer([{"status": 500}] * 3) as server, new_run(tmp_path) as expos:
        record_llm(expos, {"worker": _cfg(server, retries=2)})
        LLMWorker().run(_worker(expos))
        assert len(server.requests) == 3
        assert [e.payload["kind"] for e in expos.events("agent.error")] == ["server"] * 3
        (end,) = expos.events("agent.end")
        assert end.payload["reason"] == "provider_error" and "HTTP 500" in end.payload["error"]
        (fin,) = expos.events("worker.finalize")
        assert "[ended by the harness" in fin.payload["summary"] and "HTTP 500" in fin.payload["summary"]


def test_a_refused_key_is_not_retried(tmp_path):
    with ChatServer([{"status": 401}]) as server:
        model = OpenAIChatModel(base_url=server.url, api_key="bad", model="m")
        try:
            with pytest.raises(ProviderError) as err:
                model.complete([{"role": "user", "content": "hi"}], [], max_tokens=16, timeout=5, tag="t")
        finally:
            model.close()
    assert err.value.kind == "auth" and not err.value.retryable
    assert json.loads(json.dumps(server.requests[0]["body"]))["messages"][0]["content"] == "hi"
