"""`rsi-master sim`: generate, describe, presets, calibrate; bad input is one line and writes nothing."""

from __future__ import annotations

import pytest

from rsi_master.cli._main import main
from rsi_master.sim import PRESETS, generate_world, load_world


def test_generate_then_describe(tmp_path, capsys):
    out = tmp_path / "l.json"
    assert main(["sim", "generate", "--seed", "5", "--preset", "hard", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert load_world(out) == generate_world(5, PRESETS["hard"], preset="hard")
    assert main(["sim", "describe", str(out)]) == 0
    assert capsys.readouterr().out == printed
    assert "best_reachable:" in printed and "best_reached_by:" in printed


def test_generate_with_a_flag_and_to_stdout(capsys):
    assert main(["sim", "generate", "--seed", "1", "--flag", "n_families=7"]) == 0
    land = load_landscape_text(capsys.readouterr().out)
    assert len(land.family_specs) == 7 and land.preset is None


def load_landscape_text(text):
    from rsi_master.sim import loads_world

    return loads_world(text)


def test_presets_and_calibrate(capsys):
    assert main(["sim", "presets"]) == 0
    assert {line.split(":")[0] for line in capsys.readouterr().out.splitlines()} >= {"default", "hard", "calibrated"}
    assert main(["sim", "calibrate"]) == 0
    out = capsys.readouterr().out
    assert "fit_error_over_seed_sd:" in out and "flag.seed_spread:" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["generate", "--seed", "1", "--flag", "forget=9"], "forget"),
        (["generate", "--seed", "1", "--flag", "forget"], "expected NAME=VALUE"),
        (["generate", "--seed", "1", "--preset", "nope"], "unknown preset"),
        (["generate", "--seed", "1", "--flag", "plateau=[0.9, 0.1]"], "plateau"),
        (["describe", "missing.json"], "cannot read"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    if args[0] == "generate":
        args = [*args, "-o", "out.json"]
    assert main(["sim", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("rsi-master: error:")
    assert not (tmp_path / "out.json").exists()


def test_unwritable_output_is_one_line(tmp_path, capsys):
    assert main(["sim", "generate", "--seed", "1", "-o", str(tmp_path / "no" / "dir" / "l.json")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_pilot_writes_the_prior_of_the_world_a_run_simulates(tmp_path, capsys):
    from rsi_master.landscape import dumps, load, sim_pilot

    out = tmp_path / "prior.json"
    assert main(["sim", "pilot", "--seed", "2", "--preset", "hard", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "task: sim-2" in printed and printed.count("\ncurve ") == PRESETS["hard"].n_families
    assert dumps(load(out)) == dumps(sim_pilot(generate_world(2, PRESETS["hard"], preset="hard")))
    land = tmp_path / "land.json"
    assert main(["sim", "generate", "--seed", "2", "--preset", "hard", "-o", str(land)]) == 0
    capsys.readouterr()
    assert main(["sim", "pilot", "--world", str(land)]) == 0  # from the file: the same prior, as JSON
    assert capsys.readouterr().out == out.read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --seed N or --world FILE"),
        (["--seed", "1", "--world", "l.json"], "give --seed N or --world FILE"),
        (["--seed", "1", "--preset", "nope"], "unknown preset"),
        (["--seed", "1", "--flag", "forget=9"], "forget"),
        (["--world", "missing.json"], "cannot read"),
        (["--seed", "1", "-o", "no/such/dir/p.json"], "no such directory"),
    ],
)
def test_bad_pilot_input_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    if "-o" not in args:
        args = [*args, "-o", "out.json"]
    assert main(["sim", "pilot", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("rsi-master: error:")
    assert list(tmp_path.iterdir()) == []
