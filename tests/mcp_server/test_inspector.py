"""MCP Inspector's own command line (`@modelcontextprotocol/inspector --cli`, the version
pinned in .ci/package.json) against `rsi-master mcp`: it lists and calls the tools of every
role, over stdio (the Inspector starts the server) and over streamable HTTP. Skipped where
the Inspector is not installed, except in CI, which must run it."""

from __future__ import annotations

import json
import subprocess

import pytest

from rsi_master.expos import ExpOS, tools_for

from .conftest import inspector_env, start_http, stop

# The MCP Inspector (node) takes seconds a call: these run in the `heavy` step, as under CI=true.
pytestmark = pytest.mark.heavy

ROLES = ("worker", "reviewer", "main", "public")


def inspect(
    inspector, home, target: list[str], method: str, tool: str | None = None, args: dict | None = None
) -> tuple[int, dict]:
    argv = [str(inspector), "--cli", *target, "--method", method, "--format", "json"]
    if tool is not None:
        argv += ["--tool-name", tool, "--tool-args-json", json.dumps(args or {})]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=inspector_env(home))
    out = proc.stdout.strip() or proc.stderr.strip()
    try:
        return proc.returncode, json.loads(out.splitlines()[-1])
    except (ValueError, IndexError):
        raise AssertionError(f"inspector exit {proc.returncode}: {proc.stdout[-2000:]} {proc.stderr[-2000:]}") from None


def calls(shared) -> dict[str, dict[str, tuple[dict, str]]]:
    """Per role, one call of each of its tools: arguments and the outcome expected (`ok`,
    or the start of the error text). Nothing trains or evaluates: the calls that would are
    made so that ExpOS refuses them first."""
    x, d = shared.experiment, shared.dataset
    public = {"contract_show": ({}, "ok"), "quota_show": ({}, "ok"), "events_tail": ({"n": 3}, "ok")}
    return {
        "public": public,
        "worker": {
            **public,
            "data_generate": ({"family": "answer_only", "n": 4, "params": {"n_facts": 3}}, "ok"),
            "data_register": (
                {"rows": [{"prompt": "Q: a?\nA:", "completion": " b\n"}], "source": "hand-written"},
                "ok",
            ),
            "data_filter": ({"dataset": d, "max_chars": 4000}, "ok"),
            "data_mix": ({"datasets": [d], "n": 4}, "ok"),
            # A built-in task has no train pool, so no sampling family: refused before anything samples.
            "data_sample": ({"family": "self_distill", "n": 4}, "invalid"),
            "experiment_submit": ({"dataset": "0" * 64, "config": {"max_steps": 1}}, "refused"),
            "eval_run": ({"experiment_id": x, "split": "final"}, "refused"),
            "results_list": ({}, "ok"),
            "worker_finalize": (
                {"summary": "done", "claims": [{"experiment_id": x, "score": 0.5}]},
                "refused (metric_attribution)",
            ),
        },
        "reviewer": {
            **public,
            "experiment_inspect": ({"experiment_id": x, "sample_rows": 1}, "ok"),
            "eval_review": ({"experiment_id": "exp-99999"}, "refused"),
            "eval_compare": ({"experiment_a": x, "experiment_b": x}, "refused"),
            "audit_run": ({}, "ok"),
            "review_submit": ({"scope": ["w1"], "verdict": "pass"}, "ok"),
        },
        "main": {
            **public,
            "graph_read": ({}, "ok"),
            "experiment_inspect": ({"experiment_id": x, "sample_rows": 0}, "ok"),
            "audit_run": ({"experiments": [x]}, "ok"),
            "worker_add": ({"worker_id": "w2", "task": "more data", "predecessors": ["w1"]}, "ok"),
            "review_request": ({"reviewer_id": "r1", "question": "does it hold?", "scope": ["w1"]}, "ok"),
            "decision_record": ({"action": "continue", "rationale": "early", "evidence": [0]}, "ok"),
            "candidate_nominate": ({"experiment_id": x}, "ok"),
        },
    }


def check_list(rc: int, listed: dict, role: str) -> None:
    assert rc == 0, listed
    tools = {t["name"]: t for t in listed["result"]["tools"]}
    assert set(tools) == {t.llm_name for t in tools_for(role)}
    for t in tools.values():
        hints = t["annotations"]
        assert set(hints) >= {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}, t["name"]
        assert all(p.get("description") for p in t["inputSchema"].get("properties", {}).values()), t["name"]


def check_call(rc: int, got: dict, tool: str, expected: str) -> None:
    assert "result" in got, (tool, rc, got)
    result = got["result"]
    if expected == "ok":
        assert rc == 0 and not result.get("isError"), (tool, result)
        assert result["structuredContent"] == json.loads(result["content"][0]["text"]), tool
    else:
        assert result.get("isError") and result["content"][0]["text"].startswith(expected), (tool, result)


@pytest.mark.parametrize("role", ROLES)
def test_the_inspector_lists_and_calls_every_roles_tools_over_http(inspector, shared_run, rsi, tmp_path, role):
    plan = calls(shared_run)[role]
    assert set(plan) == {t.llm_name for t in tools_for(role)}, role  # every tool is called
    proc, url = start_http(shared_run.server(rsi, role, f"insp-{role}"))
    try:
        check_list(*inspect(inspector, tmp_path, [url], "tools/list"), role)
        for tool, (args, expected) in plan.items():
            check_call(*inspect(inspector, tmp_path, [url], "tools/call", tool, args), tool, expected)
    finally:
        stop(proc)
    with ExpOS.open(shared_run.path, writable=False, key_dir=shared_run.key_dir) as expos:
        calls_made = {(e.actor.id, e.payload["tool"]) for e in expos.events("tool.call")}
        blocked = {(e.actor.id, e.payload["tool"], e.payload["subcategory"]) for e in expos.events("guard.blocked")}
    # The calls reached the run as this role's, and ExpOS refused what it must.
    assert {(f"insp-{role}", t.name) for t in tools_for(role)} & calls_made
    if role == "worker":
        assert ("insp-worker", "data.generate") in calls_made
        assert ("insp-worker", "eval.run", "test_set_access") in blocked
    if role == "main":
        assert ("insp-main", "worker.add") in calls_made


@pytest.mark.parametrize("role", ROLES)
def test_the_inspector_starts_the_server_over_stdio_lists_and_calls(inspector, shared_run, rsi, tmp_path, role):
    # The Inspector starts the server itself, with its own minimal environment: every
    # setting travels as an argument (--key-dir included).
    target = shared_run.server(rsi, role, f"stdio-{role}")
    check_list(*inspect(inspector, tmp_path, target, "tools/list"), role)
    own = {
        "worker": ("data_generate", {"family": "chain_then_answer", "n": 3, "seed": 7}, "ok"),
        "reviewer": ("eval_compare", {"experiment_a": "exp-1", "experiment_b": "exp-2", "split": "final"}, "refused"),
        "main": ("graph_read", {}, "ok"),
        "public": ("events_tail", {"n": 1}, "ok"),
    }[role]
    check_call(*inspect(inspector, tmp_path, target, "tools/call", own[0], own[1]), own[0], own[2])
