"""`rsi-master run --backend sim`: a scripted simulated run ends with a `backend: sim` summary,
verifies and audits clean; LLM agents (the fake provider) run on it too; bad input is one line
and writes nothing."""

from __future__ import annotations

import pytest

from rsi_master.cli._main import main
from rsi_master.sim import generate_world, save_world


def _summary(out: str) -> dict[str, str]:
    tail = out.split("\n---\n")[-1]
    return dict(line.split(": ", 1) for line in tail.splitlines() if ": " in line)


@pytest.mark.parametrize("agents", [[], ["--agents", "llm", "--llm-provider", "fake"]])
def test_a_scripted_sim_run_ends_verifies_and_audits_clean(tmp_path, capsys, agents):
    land = save_world(generate_world(4), tmp_path / "land.json")
    run = tmp_path / "run"
    args = ["run", "--backend", "sim", "--world", str(land), "--budget", "30m", "--slots", "2", "--dir", str(run)]
    assert main(args + agents) == 0
    s = _summary(capsys.readouterr().out)
    assert s["backend"] == "sim" and s["task"] == "sim-4"
    assert int(s["experiments"]) >= 1 and s["hacking_rate"] == "0.0000"
    assert s["report"] == str(run / "report.html") and (run / "report.html").is_file()
    assert main(["verify", str(run)]) == 0
    assert "problems: 0" in capsys.readouterr().out
    assert main(["audit", str(run)]) == 0
    out = capsys.readouterr().out
    assert "flagged: none" in out and "backend: sim" in out


def test_the_earlier_flag_names_still_read_and_stay_out_of_help(tmp_path, capsys):
    """`--landscape`, `--landscape-seed` (run, sim pilot) and `--landscapes`, `--landscape-seeds`
    (bench) are the simulated world's earlier flags: scripts that use them keep working."""
    from rsi_master.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["run", "--backend", "sim", "--landscape", "w.json", "--landscape-seed", "3"])
    assert (args.world, args.world_seed) == ("w.json", 3)
    args = parser.parse_args(["run", "--backend", "sim"])
    assert (args.world, args.world_seed) == (None, None)
    assert str(parser.parse_args(["sim", "pilot", "--landscape", "w.json"]).world) == "w.json"
    args = parser.parse_args(["bench", "--backend", "sim", "--landscapes", "3", "--landscape-seeds", "5:2"])
    assert (args.worlds, args.world_seeds) == (3, "5:2")
    for argv in (["run", "--help"], ["bench", "--help"], ["sim", "pilot", "--help"]):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
        text = capsys.readouterr().out
        assert "--world" in text and "--landscape" not in text, text
    run = tmp_path / "run"
    assert main(["run", "--landscape-seed", "1", "--budget", "1h", "--dir", str(run)]) == 2
    assert "--world and --world-seed are for --backend sim" in capsys.readouterr().err
    assert not run.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backend", "sim", "--world", "{land}"], "not JSON"),
        (["--backend", "sim", "--world", "{missing}"], "cannot read"),
        (["--backend", "sim", "--world-seed", "1", "--preset", "nope"], "unknown preset"),
        (["--backend", "sim", "--world", "{land}", "--world-seed", "1"], "not both"),
        (["--world-seed", "1"], "for --backend sim"),
    ],
)
def test_bad_sim_input_is_one_line_and_writes_nothing(tmp_path, capsys, args, message):
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    run = tmp_path / "run"
    args = [a.format(land=bad, missing=tmp_path / "missing.json") for a in args]
    assert main(["run", *args, "--budget", "1h", "--dir", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not run.exists() and not (tmp_path / "runs").exists()


def test_an_unknown_backend_is_refused_by_the_parser(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--backend", "gpu", "--dir", str(tmp_path / "run")])
    assert exc.value.code == 2
    assert "invalid choice: 'gpu'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_sim_run_takes_a_pilot_prior_and_refuses_another_worlds(tmp_path, capsys):
    """`rsi-master sim pilot` measures a prior for a world; `run --backend sim --prior FILE`
    stores it and names it in `orchestra.start`, the run verifies and audits clean; the pilot of
    another world is one line and writes nothing."""
    from rsi_master.expos import ExpOS
    from rsi_master.landscape import dumps, load
    from rsi_master.orchestra import load_graph, run_prior

    prior = tmp_path / "prior.json"
    assert main(["sim", "pilot", "--seed", "4", "-o", str(prior)]) == 0
    assert "task: sim-4" in capsys.readouterr().out
    run = tmp_path / "run"
    args = ["run", "--backend", "sim", "--world-seed", "4", "--budget", "30m", "--slots", "2"]
    assert main([*args, "--prior", str(prior), "--dir", str(run)]) == 0
    assert _summary(capsys.readouterr().out)["task"] == "sim-4"
    with ExpOS.open(run, writable=False) as expos:
        digest = load_graph(expos.reader).settings.prior
        assert (
            digest
            and dumps(run_prior(expos.reader)) == dumps(load(prior)) == expos.run.store.read_bytes(digest).decode()
        )
    assert main(["verify", str(run)]) == 0 and "problems: 0" in capsys.readouterr().out
    assert main(["audit", str(run)]) == 0 and "flagged: none" in capsys.readouterr().out
    other = tmp_path / "other"
    assert main(["run", "--backend", "sim", "--world-seed", "5", "--prior", str(prior), "--dir", str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert "no curves for task 'sim-5'" in err and len(err.splitlines()) == 1
    assert not other.exists() and not list(tmp_path.glob(".other*"))
