"""`rsi-master landscape`: report the shipped landscape, rebuild it, measure a tiny curve."""

from __future__ import annotations

import json

import pytest

from rsi_master.cli._main import main
from rsi_master.landscape import SHIPPED, load, read_rows


def test_report_prints_every_curve_of_the_shipped_landscape(capsys):
    assert main(["landscape", "report", "--landscape", str(SHIPPED)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[:5] == ["task", "curve", "at", "5m", "at"]
    rows = {tuple(line.split()[:2]): line.split() for line in out[2:]}
    land = load(SHIPPED)
    assert set(rows) == {(t, c) for t in land.tasks for c in land.curves(t)}
    # the scratchpad at one slot's hour: past its 5x horizon, its last point; two seeds, 37 points apart at 0.5x..5x
    assert rows[("arithmetic", "scratchpad")][2:] == ["8.9%", "61.4%", "83.0%", "x5", "2", "37.0"]
    # a batch-2 curve past its horizon gives way to the batch-8 one: no estimate
    assert rows[("function_calling", "compact@b2")][3] == "-"


def test_report_as_json_and_for_one_task(capsys):
    assert main(["landscape", "report", "--json", "--tasks", "knowledge", "--budgets", "90s", "1h"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["task"] for r in rows} == {"knowledge"} and len(rows) == len(load().curves("knowledge"))
    assert all(set(r["expected"]) == {"90s", "1h"} for r in rows)
    chain = next(r for r in rows if r["curve"] == "chain_then_answer")
    assert chain["expected"]["1h"] == pytest.approx(0.38) and chain["seeds"] == 2


def test_report_markdown_has_the_targets(capsys):
    assert main(["landscape", "report", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "| task | base (dev / final) |" in out and out.rstrip().endswith(
        "crossing on >= 2 tasks: met (arithmetic, function_calling, program_synthesis)"
    )


def test_a_bad_landscape_file_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "l.json"
    bad.write_text(json.dumps({"version": 7}))
    assert main(["landscape", "report", "--landscape", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "format version 7" in err and err.count("\n") == 1
    assert main(["landscape", "report", "--budgets", "soon"]) == 2
    assert "budget 'soon'" in capsys.readouterr().err


def test_measure_nothing_rebuilds_the_landscape_from_the_results(tmp_path, capsys):
    results = tmp_path / "r.jsonl"
    results.write_text(
        json.dumps({"key": "base/arithmetic/dev", "kind": "base", "task": "arithmetic", "split": "dev", "score": 0.01})
        + "\n"
    )
    out = tmp_path / "l.json"
    assert main(["landscape", "measure", "--only", "nothing", "--results", str(results), "--landscape", str(out)]) == 0
    land = load(out)
    assert land.tasks["arithmetic"].base.score == 0.01 and land.targets.tasks["arithmetic"].base_ok


@pytest.mark.parametrize(
    "args,says",
    [
        (["--params", "ops"], "give KNOB=VALUE"),
        (["--multiples", "0"], "--multiples must be positive"),
        (["--tasks", "nope"], "nope"),
        (["--batch", "0"], "--batch must be positive"),
    ],
)
def test_measure_refuses_bad_options_in_one_line(tmp_path, capsys, args, says):
    assert main(["landscape", "measure", "--results", str(tmp_path / "r.jsonl"), *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.slow  # it trains and evaluates a real model: about a minute on two idle cores
def test_measure_a_tiny_curve(tmp_path, capsys):
    """One direction, one seed, a few optimizer steps, four evaluation items: the whole path
    from data to a curve in the results and a rebuilt landscape file, in seconds."""
    results, out = tmp_path / "r.jsonl", tmp_path / "l.json"
    args = [
        "landscape",
        "measure",
        "--only",
        "curves",
        "--tasks",
        "arithmetic",
        "--families",
        "answer_only",
        "--multiples",
        "0.004",
        "--eval-limit",
        "4",
        "--seed",
        "1",
        "--results",
        str(results),
        "--root",
        str(tmp_path / "runs"),
        "--landscape",
        str(out),
    ]
    assert main(args) == 0
    (row,) = read_rows(results)
    assert row.key == "curve/arithmetic/answer_only@s1" and row.label == "answer_only" and row.seed == 1
    assert [(p.multiple, p.step, p.examples) for p in row.points] == [(0.004, 2, 16)]
    assert 0.0 <= row.points[0].score <= 1.0 and row.tokens and row.train_seconds
    curve = load(out).curves("arithmetic")["answer_only"]
    assert curve.seeds == [1] and curve.points[0].score == row.points[0].score
    assert (tmp_path / "runs" / "curves" / "arithmetic.answer_only@s1" / "checkpoint").is_dir()
    capsys.readouterr()
    assert main(args) == 0  # recorded already: nothing measured again
    assert len(read_rows(results)) == 1 and "start" not in capsys.readouterr().out
