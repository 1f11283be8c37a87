"""`rsi-master mcp` exercised by the mcp SDK's own client: over stdio (list tools, call an
allowed tool, be refused another role's tool, get a schema error) and over streamable
HTTP on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from rsi_master.cli._main import main
from rsi_master.expos import ExpOS, tools_for
from rsi_master.mcp_server import check_loopback, tool_reference, update_doc

from ..orchestra.helpers import new_run

RSI = str(Path(sys.executable).with_name("rsi-master"))


@pytest.fixture
def run_dir(tmp_path):
    with new_run(tmp_path):
        pass
    return tmp_path / "run"


def _text(result) -> str:
    return result.content[0].text


def test_stdio_lists_the_roles_tools_calls_them_and_refuses_the_rest(run_dir, key_dir):
    params = StdioServerParameters(command=RSI, args=["mcp", str(run_dir), "--role", "worker", "--id", "ext1"],
                                   env={"RSI_MASTER_KEY_DIR": str(key_dir), "OMP_NUM_THREADS": "1"})

    async def session():
        async with Client(params) as client:
            listed = await client.list_tools()
            quota = await client.call_tool("quota_show", {})
            dotted = await client.call_tool("contract.show", {})
            other = await client.call_tool("eval_review", {"experiment_id": "exp-00001"})
            schema = await client.call_tool("data_generate", {"family": "answer_only", "n": "many"})
            override = await client.call_tool("results_list", {"sample_ids": ["x"]})
            unknown = await client.call_tool("shell", {"cmd": "ls"})
            return listed, quota, dotted, other, schema, override, unknown

    listed, quota, dotted, other, schema, override, unknown = asyncio.run(session())
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {t.llm_name for t in tools_for("worker")}
    assert tools["data_generate"].input_schema["required"] == ["family", "n"]
    assert not quota.is_error and quota.structured_content["experiments_used"] == 0
    assert json.loads(_text(quota)) == quota.structured_content
    assert not dotted.is_error and dotted.structured_content["task"] == "knowledge"
    assert other.is_error and _text(other).startswith("refused") and "test_set_access" in _text(other)
    assert schema.is_error and _text(schema).startswith("invalid") and "n" in _text(schema)
    assert override.is_error and "sample_inclusion" in _text(override)
    assert unknown.is_error and "unknown tool" in _text(unknown)
    with ExpOS.open(run_dir, writable=False) as expos:
        blocked = [(e.actor.id, e.payload["tool"], e.payload["subcategory"]) for e in expos.events("guard.blocked")]
        assert blocked == [("ext1", "eval.review", "test_set_access"), ("ext1", "results.list", "sample_inclusion")]
        assert [e.payload["tool"] for e in expos.events("tool.invalid")] == ["data.generate", "shell"]
        assert [e.payload["tool"] for e in expos.events("tool.call", actor_id="ext1")] == ["quota.show",
                                                                                          "contract.show"]


def test_streamable_http_on_loopback(run_dir, key_dir):
    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(key_dir), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([RSI, "mcp", str(run_dir), "--role", "reviewer", "--id", "rx", "--transport", "http",
                             "--port", "0"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert " at http://127.0.0.1:" in line, line
        url = line.rsplit(" at ", 1)[1].strip()

        async def session():
            async with Client(url) as client:
                listed = await client.list_tools()
                shown = await client.call_tool("contract_show", {})
                refused = await client.call_tool("worker_finalize", {"summary": "x"})
                return listed, shown, refused

        listed, shown, refused = asyncio.run(session())
        assert {t.name for t in listed.tools} == {t.llm_name for t in tools_for("reviewer")}
        assert shown.structured_content["split_sizes"]["review"] == 5
        assert refused.is_error and "may not call worker.finalize" in _text(refused)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stderr.close()


def test_bad_invocations_get_one_line(run_dir, tmp_path, capsys):
    assert main(["mcp", str(run_dir), "--role", "worker"]) == 2
    assert "no caller identity" in capsys.readouterr().err
    assert main(["mcp", str(run_dir), "--role", "root", "--id", "x"]) == 2
    assert "unknown role 'root'" in capsys.readouterr().err
    assert main(["mcp", str(tmp_path / "nothing"), "--id", "x"]) == 2
    assert main(["mcp", str(run_dir), "--id", "x", "--transport", "http", "--host", "0.0.0.0"]) == 2
    assert "loopback only" in capsys.readouterr().err
    check_loopback("::1")
    check_loopback("127.0.0.2")


def test_the_documented_tool_reference_is_the_registrys():
    doc = Path(__file__).parents[2] / "docs" / "external-agents.md"
    assert update_doc(doc, check=True), "run: python -m rsi_master.mcp_server"
    ref = tool_reference()
    for role in ("worker", "reviewer", "main"):
        for t in tools_for(role):
            assert f"### `{t.llm_name}`" in ref


def test_an_external_main_cannot_choose_the_code_a_slot_process_runs(run_dir, key_dir):
    params = StdioServerParameters(command=RSI, args=["mcp", str(run_dir), "--role", "main", "--id", "main"],
                                   env={"RSI_MASTER_KEY_DIR": str(key_dir)})

    async def session():
        async with Client(params) as client:
            evil = await client.call_tool("worker_add", {"worker_id": "w1", "task": "t",
                                                         "direction": {"family": "answer_only", "agent": "os:getcwd"}})
            plain = await client.call_tool("worker_add", {"worker_id": "w2", "task": "t",
                                                          "direction": {"family": "answer_only"}})
            return evil, plain

    evil, plain = asyncio.run(session())
    assert evil.is_error and "the run's Worker agent" in _text(evil)
    assert not plain.is_error
    with ExpOS.open(run_dir, writable=False) as expos:
        assert [e.payload["worker_id"] for e in expos.events("worker.add")] == ["w2"]
        (blocked,) = expos.events("guard.blocked")
        assert blocked.payload["tool"] == "worker.add" and blocked.actor.role == "main"


def test_the_reference_command_refuses_bad_paths_with_a_message(tmp_path, capsys):
    from rsi_master.mcp_server._reference import main as reference_main

    assert reference_main([str(tmp_path / "missing.md")]) == 2
    assert "No such file" in capsys.readouterr().err
    plain = tmp_path / "plain.md"
    plain.write_text("no markers here\n")
    assert reference_main(["--check", str(plain)]) == 2
    assert "no generated tool-reference section" in capsys.readouterr().err
    assert plain.read_text() == "no markers here\n"
