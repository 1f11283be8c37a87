"""`rsi-master mcp` exercised by the mcp SDK's own client: over stdio (list tools, call an
allowed tool, be refused another role's tool, get a schema error), over streamable HTTP on
loopback, progress notifications on a long call; and the tool surface MCP clients see
(names, annotations, described inputs, enums, generator knobs)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from rsi_master.cli._main import main
from rsi_master.expos import TOOLS, ExpOS, tools_for
from rsi_master.expos._registry import HINTS, LLM_NAME
from rsi_master.mcp_server import check_loopback, tool_reference, update_doc
from tests.helpers import capability_file

from ..orchestra.helpers import new_run


@pytest.fixture
def run_dir(tmp_path):
    with new_run(tmp_path):
        pass
    return tmp_path / "run"


def _text(result) -> str:
    return result.content[0].text


def cap(run_dir, role, node) -> str:
    with ExpOS.open(run_dir, writable=False) as x:
        return x.issue(role, node)


def test_stdio_lists_the_roles_tools_calls_them_and_refuses_the_rest(run_dir, rsi, tmp_path):
    """The agent's own server: started by the client with a minimal environment and no key
    directory, it holds only the capability and calls through the harness's door."""
    from rsi_master.expos._door import Door

    door = Door(run_dir, socket_path=tmp_path / "door" / "d.sock").start()
    params = StdioServerParameters(
        command=rsi,
        args=["mcp", "--door", str(door.path), "--capability-file", capability_file(cap(run_dir, "worker", "ext1"))],
        env={"OMP_NUM_THREADS": "1"},
    )

    async def session():
        async with Client(params) as client:
            listed = await client.list_tools()
            quota = await client.call_tool("quota_show", {})
            dotted = await client.call_tool("contract.show", {})
            other = await client.call_tool("eval_review", {"experiment_id": "exp-00001"})
            schema = await client.call_tool("data_generate", {"family": "answer_only", "n": "many"})
            override = await client.call_tool("results_list", {"sample_ids": ["x"]})
            unknown = await client.call_tool("shell", {"cmd": "ls"})
            foreign = await client.call_tool("checkpoint_register", {"path": "/tmp/weights"})
            # Outside the advertised enum: the server does not answer it from the schema, ExpOS does.
            final = await client.call_tool("eval_run", {"experiment_id": "exp-00001", "split": "final"})
            return listed, quota, dotted, other, schema, override, unknown, foreign, final

    try:
        listed, quota, dotted, other, schema, override, unknown, foreign, final = asyncio.run(session())
    finally:
        door.close()
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
    # Not offered, so no agent calls it by browsing its tools; called by name, it is what
    # it says: a request to bring foreign weights in, refused and recorded as one.
    assert "checkpoint_register" not in tools
    assert foreign.is_error and _text(foreign).startswith("refused (weight_provenance)")
    assert final.is_error and _text(final).startswith("refused (test_set_access)")
    with ExpOS.open(run_dir, writable=False) as expos:
        blocked = [(e.actor.id, e.payload["tool"], e.payload["subcategory"]) for e in expos.events("guard.blocked")]
        assert blocked == [
            ("ext1", "eval.review", "test_set_access"),
            ("ext1", "results.list", "sample_inclusion"),
            ("ext1", "checkpoint.register", "weight_provenance"),
            ("ext1", "eval.run", "test_set_access"),
        ]
        assert [e.payload["tool"] for e in expos.events("tool.invalid")] == ["data.generate", "shell"]
        # contract.show first: the server's start, which also proves the capability to the door.
        assert [e.payload["tool"] for e in expos.events("tool.call", actor_id="ext1")] == [
            "contract.show",
            "quota.show",
            "contract.show",
        ]
        assert len({e.actor.cap for e in expos.events("tool.call", actor_id="ext1")}) == 1


@pytest.mark.heavy
def test_an_agents_server_through_the_door_serves_a_task_directory_run(rsi, tmp_path):
    """The agent's server holds no run, so it cannot load a task directory's task: the door
    describes the run's generator families in `contract.show`, and the tool list is built from
    that (a name lookup of the task in the server's process failed with an unknown task)."""
    from rsi_master.expos._door import Door

    from ..tasks.dir.helpers import make_task_dir

    task_dir = make_task_dir(tmp_path / "task", "numeric", n=6, train=8)
    with ExpOS.create(tmp_path / "run", task_dir, eval_limit=4):
        pass
    door = Door(tmp_path / "run", socket_path=tmp_path / "door" / "d.sock").start()
    params = StdioServerParameters(
        command=rsi,
        args=[
            "mcp",
            "--door",
            str(door.path),
            "--capability-file",
            capability_file(cap(tmp_path / "run", "worker", "ext1")),
        ],
        env={"OMP_NUM_THREADS": "1"},
    )

    async def session():
        async with Client(params) as client:
            listed = await client.list_tools()
            made = await client.call_tool("data_generate", {"family": "pool", "n": 4})
            return listed, made

    try:
        listed, made = asyncio.run(session())
    finally:
        door.close()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {t.llm_name for t in tools_for("worker")}
    family = tools["data_generate"].input_schema["properties"]["family"]
    assert set(family["enum"]) == {"pool", "pool_prompts"} and "train pool" in family["description"].lower()
    assert tools["data_sample"].input_schema["properties"]["family"]["enum"] == ["sample_pairs", "self_distill"]
    assert not made.is_error, _text(made)
    assert made.structured_content["n_rows"] == 4 and made.structured_content["contamination"] == "clean"
    with ExpOS.open(tmp_path / "run", writable=False) as expos:
        assert [(e.actor.id, e.payload["source"]) for e in expos.events("data.generate")] == [("ext1", "numeric/pool")]


def test_streamable_http_on_loopback(run_dir, key_dir, rsi):
    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(key_dir), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [
            rsi,
            "mcp",
            str(run_dir),
            "--capability-file",
            capability_file(cap(run_dir, "reviewer", "rx")),
            "--transport",
            "http",
            "--port",
            "0",
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
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
    w = cap(run_dir, "worker", "x")
    assert main(["mcp", str(run_dir), "--role", "worker", "--id", "x"]) == 2
    assert "--role and --id are not taken" in capsys.readouterr().err
    assert main(["mcp", str(run_dir)]) == 2
    assert "no capability" in capsys.readouterr().err
    assert main(["mcp", "--capability-file", capability_file(w)]) == 2
    assert "no door and no run" in capsys.readouterr().err
    assert main(["mcp", str(run_dir), "--door", str(tmp_path / "d.sock"), "--capability-file", capability_file(w)]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["mcp", "--door", str(tmp_path / "d.sock"), "--capability-file", capability_file(w)]) == 2
    assert "cannot reach the ExpOS door" in capsys.readouterr().err
    assert main(["mcp", str(run_dir), "--capability-file", capability_file(w[:-4] + "AAAA")]) == 2
    assert "MAC does not verify" in capsys.readouterr().err
    assert main(["mcp", str(tmp_path / "nothing"), "--capability-file", capability_file(w)]) == 2
    assert (
        main(["mcp", str(run_dir), "--capability-file", capability_file(w), "--transport", "http", "--host", "0.0.0.0"])
        == 2
    )
    assert "loopback only" in capsys.readouterr().err
    assert main(["mcp", str(run_dir), "--capability-file", capability_file(w), "--progress-every", "0"]) == 2
    assert "--progress-every must be a positive" in capsys.readouterr().err
    check_loopback("::1")
    check_loopback("127.0.0.2")


def test_the_documented_tool_reference_is_the_registrys():
    doc = Path(__file__).parents[2] / "docs" / "external-agents.md"
    assert update_doc(doc, check=True), "run: python -m rsi_master.mcp_server"
    ref = tool_reference()
    for role in ("worker", "reviewer", "main"):
        for t in tools_for(role):
            assert f"### `{t.llm_name}`" in ref


def test_an_external_main_cannot_choose_the_code_a_slot_process_runs(run_dir, key_dir, rsi):
    params = StdioServerParameters(
        command=rsi,
        args=["mcp", str(run_dir), "--capability-file", capability_file(cap(run_dir, "main", "main"))],
        env={"RSI_MASTER_KEY_DIR": str(key_dir)},
    )

    async def session():
        async with Client(params) as client:
            evil = await client.call_tool(
                "worker_add",
                {"worker_id": "w1", "task": "t", "direction": {"family": "answer_only", "agent": "os:getcwd"}},
            )
            plain = await client.call_tool(
                "worker_add", {"worker_id": "w2", "task": "t", "direction": {"family": "answer_only"}}
            )
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


# -- the tool surface MCP clients see ------------------------------------------------------------
def _properties(schema: dict, path: str = ""):
    """(path, property schema) for every property at any depth, through $defs and items."""
    defs = schema.get("$defs", {})

    def walk(s: dict, at: str):
        if "$ref" in s:
            yield from walk(defs[s["$ref"].rsplit("/", 1)[-1]], at)
        for key in ("items", "additionalProperties"):
            if isinstance(s.get(key), dict):
                yield from walk(s[key], f"{at}[]")
        for variant in s.get("anyOf", []):
            yield from walk(variant, at)
        for name, p in s.get("properties", {}).items():
            yield f"{at}.{name}", p
            yield from walk(p, f"{at}.{name}")

    yield from walk(schema, path)


def test_every_tool_has_an_mcp_name_hints_and_a_described_input(run_dir, key_dir):
    tools_for("public")
    assert set(HINTS) == set(TOOLS), "every tool says whether it is read-only and idempotent"
    with ExpOS.open(run_dir) as expos:
        contract = expos.contract
    for t in TOOLS.values():
        assert LLM_NAME.match(t.llm_name) and "." not in t.llm_name, t.name
        for schema in (t.input_schema(), t.input_schema(contract)):
            assert schema["type"] == "object" and schema.get("additionalProperties") is False, t.name
            undescribed = [p for p, s in _properties(schema, t.llm_name) if not s.get("description")]
            assert not undescribed, undescribed
        if t.hints.read_only:
            assert t.kind == "monitoring" or t.name in ("experiment.inspect", "eval.compare"), t.name
    assert not HINTS["contract.show"].destructive and HINTS["quota.show"].read_only
    assert not HINTS["experiment.submit"].read_only and not HINTS["experiment.submit"].idempotent
    assert not any(h.destructive or h.open_world for h in HINTS.values())
    closed = {
        ("decision.record", "action"): ["continue", "verify", "branch", "revise", "stop"],
        ("review.submit", "verdict"): ["pass", "fail"],
        ("eval.run", "split"): ["dev"],
        ("eval.compare", "split"): ["review", "dev"],
        ("experiment.submit", "method"): ["sft", "lora", "dpo", "grpo"],
    }
    for (name, field), values in closed.items():
        assert TOOLS[name].input_schema()["properties"][field]["enum"] == values, (name, field)


def test_a_split_outside_the_advertised_enum_is_still_a_recorded_attempt(run_dir):
    # The enum tells the agent what works; the door still decides, so `final` is refused as
    # test-set access (not merely invalid input) whether or not the client checked the schema.
    from rsi_master.expos import Caller, ToolRefused

    with ExpOS.open(run_dir) as expos:
        with pytest.raises(ToolRefused, match="test_set_access"):
            expos.call(Caller("worker", "w"), "eval_run", {"experiment_id": "exp-1", "split": "final"})
        with pytest.raises(ToolRefused, match="test_set_access"):
            expos.call(
                Caller("reviewer", "r"), "eval.compare", {"experiment_a": "a", "experiment_b": "b", "split": "final"}
            )


def test_data_generate_schema_names_the_runs_families_and_every_knob_with_its_range(tmp_path):
    from rsi_master.expos import Budget, Caller, ToolInvalid
    from rsi_master.tasks import get_task

    w = Caller("worker", "w")
    with ExpOS.create(
        tmp_path / "run",
        "arithmetic",
        eval_limit=3,
        budget=Budget(max_rows=500),
        allowed_generators=["arithmetic/answer_only", "arithmetic/scratchpad"],
        allowed_methods=["sft", "lora"],
    ) as expos:
        schema = TOOLS["data.generate"].input_schema(expos.contract)
        props = schema["properties"]
        assert props["family"]["enum"] == ["answer_only", "scratchpad"]  # only what the contract allows
        assert props["n"]["maximum"] == 500
        knobs = get_task("arithmetic").generators()["answer_only"].knobs
        params = props["params"]
        assert params["additionalProperties"] is False and set(params["properties"]) == {k.name for k in knobs}
        for k in knobs:
            p = params["properties"][k.name]
            assert p["default"] == k.default and p["description"]
            if k.kind == "choice":
                assert p["enum"] == list(k.choices)
            else:
                assert (p["minimum"], p["maximum"]) == (k.low, k.high)
                # The advertised range is the generator's: its ends pass, one past the top does not.
                top = {"min_digits": 1, "max_digits": 4} if k.name in ("min_digits", "max_digits") else {}
                expos.call(
                    w, "data.generate", {"family": "answer_only", "n": 2, "params": {**top, k.name: p["maximum"]}}
                )
                with pytest.raises(ToolInvalid, match=k.name):
                    expos.call(
                        w, "data.generate", {"family": "answer_only", "n": 2, "params": {k.name: p["maximum"] + 1}}
                    )
        assert "min_digits (integer 1..4, default 2)" in params["description"]
        submit = TOOLS["experiment.submit"].input_schema(expos.contract)["properties"]
        assert submit["method"]["enum"] == ["sft", "lora"]
        config = submit["config"]
        assert (
            config["additionalProperties"] is False
            and {"learning_rate", "max_steps", "lora_r"} <= set(config["properties"])
            and "method" not in config["properties"]
        )
        assert config["properties"]["learning_rate"]["maximum"] == 0.1
    static = TOOLS["data.generate"].input_schema()["properties"]
    assert {"knowledge/answer_only", "program_synthesis/program_only"} <= set(static["family"]["enum"])
    assert {"n_facts", "min_depth", "n_shown"} <= set(static["params"]["properties"])


def test_the_mcp_listing_carries_annotations_and_the_runs_schemas(run_dir):
    from rsi_master.mcp_server import ExposDoor, mcp_tools

    door = ExposDoor(cap(run_dir, "worker", "w1"), run_dir=run_dir)
    try:
        listed = {t.name: t for t in door.pool.submit(mcp_tools, door).result()}
    finally:
        door.close()
    gen = listed["data_generate"]
    assert gen.title == "data.generate" and gen.annotations.idempotent_hint and not gen.annotations.read_only_hint
    assert gen.input_schema["properties"]["family"]["enum"] == ["answer_only", "chain_then_answer", "quote_then_answer"]
    assert listed["quota_show"].annotations.read_only_hint
    assert all(
        t.annotations.destructive_hint is False and t.annotations.open_world_hint is False for t in listed.values()
    )


@pytest.mark.heavy
def test_a_long_call_reports_progress_while_it_runs(tmp_path, key_dir, rsi):
    from rsi_master.expos import Caller
    from rsi_master.expos._state import experiment_id

    with ExpOS.create(tmp_path / "run", "knowledge", eval_limit=3) as x:
        d = x.call(Caller("worker", "w1"), "data.generate", {"family": "answer_only", "n": 4}).dataset
        base = x.contract.base_model_artifact
        start = x.record(
            Caller("worker", "w1"),
            "experiment.start",
            {"parent": "base", "parent_checkpoint": base, "dataset": d, "method": "sft", "spec": {}},
        )
        xid = experiment_id(start.seq)
        x.record(
            Caller("worker", "w1"),
            "experiment.finish",
            {"experiment_id": xid, "status": "completed", "checkpoint": base, "steps": 1},
        )
    params = StdioServerParameters(
        command=rsi,
        args=[
            "mcp",
            str(tmp_path / "run"),
            "--capability-file",
            capability_file(cap(tmp_path / "run", "worker", "w1")),
            "--key-dir",
            str(key_dir),
            "--progress-every",
            "0.3",
        ],
    )
    seen: list[tuple[float, str | None]] = []

    async def progress(done, total, message):
        seen.append((done, message))

    async def session():
        async with Client(params) as client:
            quick = await client.call_tool("quota_show", {}, progress_callback=progress)
            n_quick = len(seen)
            # The base weights evaluated on dev: seconds of model loading and generation.
            scored = await client.call_tool("eval_run", {"experiment_id": xid}, progress_callback=progress)
            return quick, n_quick, scored

    quick, n_quick, scored = asyncio.run(session())
    assert not quick.is_error and n_quick == 0
    assert not scored.is_error and scored.structured_content["n_samples"] == 3
    assert seen[0] == (0.0, "eval.run: started") and len(seen) >= 3, seen
    assert all(b[0] > a[0] for a, b in itertools.pairwise(seen)), seen
    assert all(m.startswith("eval.run: running for ") for _, m in seen[1:]), seen
