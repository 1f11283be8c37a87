"""Landscape files and the module's CLI: round trips, and one-line errors that write nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rsi_master.sim import WorldFileError, generate_world, load_world, save_world

SRC = str(Path(__file__).resolve().parents[2] / "src")


def sim_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "rsi_master.sim", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=60
    )


def test_save_and_load_round_trip(tmp_path):
    land = generate_world(12)
    path = save_world(land, tmp_path / "l.json")
    again = load_world(path)
    assert again == land and again.best_reachable() == land.best_reachable()
    ckpt, _ = land.train(land.base_checkpoint(), _recipe(land), 0)
    assert again.train(again.base_checkpoint(), _recipe(again), 0)[0] == ckpt


def _recipe(land):
    from rsi_master.sim import SimRecipe

    f = land.family_specs[0]
    return SimRecipe(family=f.name, learning_rate=1e-3, batch_size=32, steps=500, rows=20000)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a simulated world"),
        ('{"format": "something-else"}', "not a simulated world"),
        ('{"format": "rsi-master-sim-landscape", "version": 9}', "format version 9 unknown"),
        ('{"format": "rsi-master-sim-landscape", "version": 1, "seed": 1}', "Field required"),
    ],
)
def test_bad_files_give_one_line_errors(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(WorldFileError, match=message) as exc:
        load_world(path)
    assert "\n" not in str(exc.value)


def test_a_file_with_an_out_of_range_flag_is_refused(tmp_path):
    data = json.loads(generate_world(1).model_dump_json())
    data["flags"]["forget"] = 3.0
    (tmp_path / "l.json").write_text(json.dumps(data))
    with pytest.raises(WorldFileError, match="forget") as exc:
        load_world(tmp_path / "l.json")
    assert "\n" not in str(exc.value)


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(WorldFileError, match="cannot read"):
        load_world(tmp_path / "none.json")
    (tmp_path / "b.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(WorldFileError, match="cannot read"):
        load_world(tmp_path / "b.json")


def test_cli_generates_describes_and_refuses_bad_input(tmp_path):
    ok = sim_cli("generate", "--seed", "4", "--preset", "hard", "-o", "l.json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "best_reachable:" in ok.stdout
    assert load_world(tmp_path / "l.json") == generate_world(4, preset="hard", flags=None)
    desc = sim_cli("describe", "l.json", cwd=tmp_path)
    assert desc.returncode == 0 and desc.stdout == ok.stdout
    for args, message in [
        (("generate", "--seed", "1", "--flag", "forget=2", "-o", "x.json"), "forget"),
        (("generate", "--seed", "1", "--flag", "n_families=99", "-o", "x.json"), "n_families"),
        (("generate", "--seed", "1", "--flag", "nonsense=1", "-o", "x.json"), "nonsense"),
        (("generate", "--seed", "1", "--preset", "nope", "-o", "x.json"), "unknown preset"),
        (("describe", "missing.json"), "cannot read"),
    ]:
        bad = sim_cli(*args, cwd=tmp_path)
        assert bad.returncode == 2, (args, bad.stdout)
        assert bad.stderr.count("\n") == 1 and message in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr
    assert not (tmp_path / "x.json").exists()


def test_outcomes_are_the_same_in_another_process():
    code = (
        "from rsi_master.sim import generate_world, SimRecipe\n"
        "land = generate_world(21, preset='hard')\n"
        "f = land.family_specs[0]\n"
        "r = SimRecipe(family=f.name, learning_rate=1e-3, batch_size=32, steps=700, rows=9000)\n"
        "c, s = land.train(land.base_checkpoint(), r, 5)\n"
        "print(c.ident, s, land.evaluate(c, 'dev', 100), repr(land.accuracy(c, 'final')))\n"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": SRC, "PYTHONHASHSEED": str(h)},
            timeout=60,
            check=True,
        ).stdout
        for h in (1, 2)
    }
    assert len(outs) == 1


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["family_specs"][0].update(methods=["lora"]), "no sft"),
        (lambda d: d["family_specs"][0].update(plateau=2.0), "out of range"),
        (lambda d: d.update(interactions={"nope+other": 0.1}), "does not name two families"),
        (lambda d: d["family_specs"].append(d["family_specs"][0]), "unique"),
        (lambda d: d.update(split_sizes={"dev": 10}), "split_sizes"),
        (lambda d: d["method_specs"].pop("sft"), "without a method spec"),
    ],
)
def test_inconsistent_files_are_refused_in_one_line(tmp_path, edit, message):
    data = json.loads(generate_world(2).model_dump_json())
    edit(data)
    (tmp_path / "l.json").write_text(json.dumps(data))
    with pytest.raises(WorldFileError, match=message) as exc:
        load_world(tmp_path / "l.json")
    assert "\n" not in str(exc.value)


def test_inconsistent_knobs_are_refused(tmp_path):
    for seed in range(10):
        data = json.loads(generate_world(seed).model_dump_json())
        knobs = [k for f in data["family_specs"] for k in f["knobs"]]
        if knobs:
            break
    k = knobs[0]
    k["optimum"] = "nonsense" if k["kind"] != "choice" else "not-a-choice"
    (tmp_path / "l.json").write_text(json.dumps(data))
    with pytest.raises(WorldFileError, match="inconsistent"):
        load_world(tmp_path / "l.json")
