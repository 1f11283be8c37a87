"""`RunSpec` and `resolve_spec`: every input of a run checked in one place, one line per rule,
nothing written; the CLI and the bench build the same spec for the same input."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rsi_master.errors import RsiMasterError
from rsi_master.orchestra import PlainDisplay, RunSpec, resolve_spec, start_run
from rsi_master.sim import generate_world

LAND = generate_world(0)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"backend": "gpu"}, "unknown backend 'gpu'; known: real, sim"),
        ({"backend": "sim", "task": None}, "backend sim needs a simulated world (--world FILE or --world-seed N)"),
        ({"world": LAND}, "a simulated world is for the sim backend, not real"),
        ({"task": None}, "name a task"),
        (
            {"backend": "sim", "world": LAND, "task": "knowledge"},
            f"a simulated run's task is its world's ({LAND.task_name}), not 'knowledge'",
        ),
        (
            {"backend": "sim", "world": LAND, "task": None, "model": "x"},
            "a simulated run's model and evaluator are its world's: no --model or --eval-backend",
        ),
        (
            {"task": "nosuch"},
            "unknown task 'nosuch'; known: arithmetic, function_calling, knowledge, program_synthesis",
        ),
        ({"budget": "5 minutes"}, "budget '5 minutes': give seconds or a duration such as 90s, 5m, 1h30m"),
        ({"budget": "-5"}, "budget must be positive, got '-5'"),
        ({"budget": "1s"}, "budget 1s is too short to train anything"),
        ({"slots": 0}, "slots must be at least 1, got 0"),
        ({"eval_limit": 0}, "eval_limit must be positive, got 0"),
        ({"final_limit": -1}, "final_limit must be 0 (the whole split) or positive, got -1"),
        ({"keep": "some"}, "unknown --keep policy 'some'; known: all, referenced"),
        ({"executor": "slurm"}, "unknown executor 'slurm'; known:"),
        ({"ray_address": "auto", "executor": "process"}, "--ray-address is for --executor ray"),
        ({"eval_backend": "tgi"}, "unknown evaluation backend 'tgi'; known: transformers, vllm"),
        ({"prior": "no-such-prior.json"}, "no-such-prior.json"),
    ],
)
def test_each_rule_is_refused_in_one_line_before_anything_is_written(tmp_path, fields, message):
    spec = RunSpec(**{"task": "knowledge", "budget": "5m", "run_dir": tmp_path / "run", **fields})
    with pytest.raises(RsiMasterError) as info:
        resolve_spec(spec)
    text = str(info.value)
    assert message in text and "\n" not in text, text
    # start_run refuses it the same way, and writes nothing.
    with pytest.raises(RsiMasterError, match=None) as again:
        start_run(spec, display=PlainDisplay(io.StringIO()))
    assert str(again.value) == text
    assert not any(tmp_path.iterdir())


def test_a_directory_that_holds_files_is_refused(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "x").write_text("mine")
    with pytest.raises(RsiMasterError, match="already holds files; nothing was overwritten"):
        resolve_spec(RunSpec(task="knowledge", run_dir=tmp_path / "run"))
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["x"]


def test_a_bad_model_is_refused_in_one_line(tmp_path):
    with pytest.raises(RsiMasterError) as info:
        resolve_spec(RunSpec(task="knowledge", model=tmp_path / "nomodel", run_dir=tmp_path / "run"))
    assert "\n" not in str(info.value)
    assert not (tmp_path / "run").exists()


def test_resolving_a_spec_gives_the_task_and_the_budget_once(tmp_path):
    run = resolve_spec(RunSpec(task="knowledge", budget="2m", run_dir=tmp_path / "r"))
    assert run.task.name == "knowledge" and run.budget_s == 120.0 and run.path == tmp_path / "r"
    default = resolve_spec(RunSpec(task="knowledge", run_dir=tmp_path / "r"))
    assert default.budget_s == 300.0  # the task's default (DEFAULTS)
    sim = resolve_spec(RunSpec(backend="sim", world=LAND, run_dir=tmp_path / "s"))
    assert sim.task.name == LAND.task_name and sim.budget_s == LAND.flags.budget_hours * 3600.0
    assert sim.eval_backend is None and default.eval_backend is not None
    assert not any(tmp_path.iterdir())


def _cli_spec(argv: list[str]) -> RunSpec:
    from rsi_master.cli._main import build_parser
    from rsi_master.cli._run import spec_from_args

    return spec_from_args(build_parser().parse_args(["run", *argv]))


def test_the_cli_and_the_bench_build_the_same_spec_for_the_same_input(tmp_path):
    """A simulated campaign of the bench's full system and `rsi-master run --backend sim` on the
    same world, budget, slots, seed and limits resolve to the same run; they differ only in
    what the bench adds on purpose (its Workers with shortcut tendencies, its settings)."""
    from rsi_master.bench import ShortcutTendency, campaign_spec

    land = generate_world(7)
    path = tmp_path / "l.json"
    from rsi_master.sim import save_world

    save_world(land, path)
    cli = _cli_spec(
        [
            "--backend=sim",
            f"--world={path}",
            "--budget=36000",
            "--slots=4",
            "--seed=2",
            "--eval-limit=50",
            f"--dir={tmp_path / 'run'}",
        ]
    )
    bench = campaign_spec(
        "rsi-master",
        land.task_name,
        2,
        36000.0,
        tmp_path / "run",
        slots=4,
        eval_limit=50,
        tendency=ShortcutTendency(),
        max_train_steps=cli.max_train_steps,
        world=land,
    )
    a, b = resolve_spec(cli), resolve_spec(bench)
    assert (a.task.name, a.budget_s, a.path, a.eval_backend, a.prior, a.guards) == (
        b.task.name,
        b.budget_s,
        b.path,
        b.eval_backend,
        b.prior,
        b.guards,
    )
    same = ("backend", "slots", "seed", "eval_limit", "max_train_steps", "main", "reviewer", "keep")
    assert {k: getattr(cli, k) for k in same} == {k: getattr(bench, k) for k in same}
    assert a.spec.world is not None and b.spec.world is not None
    assert a.spec.world.ident == b.spec.world.ident
    assert not Path(tmp_path / "run").exists()


def test_a_task_directory_run_holds_its_task_and_the_registry_stays_built_in(tmp_path):
    """The session holds the run's task (the directory's sealed copy); nothing registers it by
    name, so a process that opens the run later finds it through the run, not the registry; and
    an MCP server on the run, the operator's or an agent's through the harness's door, lists the
    role's tools with the task's families."""
    from rsi_master.expos import ExpOS, tools_for
    from rsi_master.expos._door import Door
    from rsi_master.mcp_server import ExposDoor, mcp_tools
    from rsi_master.tasks import FileTask, UnknownTaskError, get_task

    from ..tasks.dir.helpers import make_task_dir

    task_dir = make_task_dir(tmp_path / "task", "numeric", name="dir-task", n=6, train=8)
    run = resolve_spec(RunSpec(task=task_dir, run_dir=tmp_path / "run"))
    assert isinstance(run.task, FileTask) and run.task.name == "dir-task"
    with ExpOS.create(tmp_path / "run", run.task, eval_limit=4) as x:
        assert isinstance(x.task, FileTask) and x.task.name == "dir-task"
        assert x.task.root != Path(task_dir)  # the sealed copy, not the directory an agent may edit
        cap = x.issue("worker", "ext1")
    with pytest.raises(UnknownTaskError):
        get_task("dir-task")
    with ExpOS.open(tmp_path / "run") as x:
        assert x.task.name == "dir-task" and sorted(x.generators()) == sorted(run.task.generators())
    worker_tools = {t.llm_name for t in tools_for("worker")}
    operator = ExposDoor(cap, run_dir=tmp_path / "run")
    try:
        listed = {t.name: t for t in mcp_tools(operator)}
    finally:
        operator.close()
    assert set(listed) == worker_tools
    assert "pool" in listed["data_generate"].input_schema["properties"]["family"]["enum"]
    door = Door(tmp_path / "run", socket_path=tmp_path / "door" / "d.sock").start()
    try:
        agent = ExposDoor(cap, door=door.path)
        try:
            through = {t.name: t for t in mcp_tools(agent)}
        finally:
            agent.close()
    finally:
        door.close()
    assert set(through) == worker_tools
    assert through["data_generate"].input_schema == listed["data_generate"].input_schema


def test_a_rule_the_bench_checks_up_front_is_refused_in_the_same_line(tmp_path):
    """The bench checks its campaigns' inputs before starting any; where a rule is a run's, the
    line is the one `resolve_spec` and freezing a contract give."""
    from rsi_master.bench._bench import check_settings

    with pytest.raises(RsiMasterError) as bench:
        check_settings(["rsi-master"], ["knowledge"], [0], "5m", 1, 0)
    with pytest.raises(RsiMasterError) as run:
        resolve_spec(RunSpec(task="knowledge", eval_limit=0, run_dir=tmp_path / "run"))
    assert str(bench.value) == str(run.value) == "eval_limit must be positive, got 0"
