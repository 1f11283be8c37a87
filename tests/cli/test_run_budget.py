"""`rsi-master run` on short budgets, on runs that return nothing, and on a machine slower than
the timing model: each ends in a selected checkpoint or exits non-zero saying why, and a budget
or a task that cannot train anything is one line with nothing written. The fast checks run on the
simulated backend (the same Main, scheduler and Workers on a simulated clock); the real-training
ones are `slow`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rsi_master.cli._main import main
from rsi_master.expos import ExpOS
from rsi_master.orchestra import load_graph
from rsi_master.orchestra._graph import parse_ts
from rsi_master.orchestra._main_budget import RESERVE_FRACTION, RESERVE_S, overrun_factor
from rsi_master.sim import flags_from, generate_world, save_world


def _summary(out: str) -> dict[str, str]:
    tail = out.split("\n---\n")[-1]
    return dict(line.split(": ", 1) for line in tail.splitlines() if ": " in line)


def _sim(tmp_path: Path, budget: str, *extra: str, land: Path | None = None) -> tuple[int, Path]:
    run = tmp_path / f"run-{budget}"
    where = ["--world", str(land)] if land is not None else ["--world-seed", "0"]
    rc = main(["run", "--backend", "sim", *where, "--budget", budget, "--dir", str(run), *extra])
    return rc, run


def _returned_or_said_why(rc: int, s: dict[str, str], budget_s: float) -> None:
    """A run returns a checkpoint having spent most of its budget, or exits 3 saying why not."""
    if rc == 0:
        assert s["selected"] != "n/a" and float(s["final_score"]) >= 0.0, s
        assert float(s["spent_s"]) >= 0.8 * budget_s, s
        assert Path(s["selected_model"]).exists(), s  # where the returned model is
    else:
        assert rc == 3, s
        assert s["final_score"] == "n/a" and s["selected"] == "n/a" and s["why"], s
        assert s["selected_model"] == "n/a", s


@pytest.mark.parametrize("budget", ["10", "45"])
@pytest.mark.parametrize("backend", [[], ["--backend", "sim", "--world-seed", "0"]])
def test_a_budget_too_short_to_train_anything_is_one_line_and_writes_nothing(tmp_path, capsys, budget, backend):
    run = tmp_path / "run"
    assert main(["run", *backend, "--budget", budget, "--dir", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"budget {budget}s is too short to train anything" in err and "give at least" in err
    least = float(err.rsplit("give at least ", 1)[1].rstrip("s"))
    assert least > float(budget)
    assert not run.exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("budget", ["60", "90", "150"])
def test_a_short_budget_trains_something_and_spends_it_or_says_why(tmp_path, capsys, budget):
    """Every Worker a short run starts gets an allowance that holds a trial at the task's cheapest
    batch, and starts one (before, a Worker given a share of a short budget below one trial
    finalized at once, `0 started`); the run returns a checkpoint or exits 3 saying why not."""
    rc, run = _sim(tmp_path, budget)
    _returned_or_said_why(rc, _summary(capsys.readouterr().out), float(budget))
    with ExpOS.open(run, writable=False) as x:
        owners = {e.owner for e in x.projection().state.experiments.values()}
        graph = load_graph(x.reader)
        started = {j.node for j in graph.jobs if j.kind == "worker"}
        assert started and started <= owners, (started, owners)


class IdleWorker:
    """A Worker that finalizes without an experiment: the run has nothing to return."""

    def run(self, ctx) -> None:
        ctx.call("worker.finalize", {"summary": "nothing tried", "claims": [], "candidates": []})


def test_a_run_that_returned_no_checkpoint_exits_3_with_final_score_na_and_why(tmp_path, capsys):
    rc, run = _sim(tmp_path, "10m", "--worker", f"{__name__}:IdleWorker")
    out = capsys.readouterr().out
    s = _summary(out)
    assert rc == 3, out[-2000:]
    assert s["final_score"] == "n/a" and s["selected"] == "n/a"
    assert re.fullmatch(r"\d+ Workers started no experiment \(.+\)", s["why"]) and float(s["base_score"]) >= 0.0
    stored = json.loads(Path(s["summary_json"]).read_text())
    assert stored["final_score"] is None and stored["why"] == s["why"]
    assert main(["verify", str(run)]) == 0  # a run that returned nothing is still a whole, verifiable run


class MistypingWorker:
    """A Worker whose only data call is invalid (a family the task lacks), then finalizes."""

    def run(self, ctx) -> None:
        from rsi_master.expos import ToolError

        with contextlib.suppress(ToolError):
            ctx.call("data.generate", {"family": "answer_onyl", "n": 4})
        ctx.call("worker.finalize", {"summary": "nothing tried", "claims": [], "candidates": []})


def test_why_names_the_workers_last_failed_call_when_they_started_no_experiment(tmp_path, capsys):
    """A run whose Workers trained nothing because their calls failed says which call and why
    (a user's model that samples nothing that passes, a mistyped family), not only the count."""
    rc, _ = _sim(tmp_path, "10m", "--worker", f"{__name__}:MistypingWorker")
    s = _summary(capsys.readouterr().out)
    assert rc == 3 and s["final_score"] == "n/a", s
    assert re.fullmatch(
        r"\d+ Workers started no experiment \(.+; the last failed call: data\.generate: .+\)", s["why"]
    ), s
    assert "no generator family 'answer_onyl'" in s["why"]


def test_why_names_the_agents_last_error_when_no_worker_was_started(tmp_path, capsys):
    """An LLM Main whose endpoint answers every request with a server error (it passes the check
    before the run, which counts any HTTP answer) starts no Worker: `why` says so and names the
    agent's error, not only `no work left`."""
    script = {"main": {ep: [{"error": "server"}] * 40 for ep in ("start", "idle", "finalize", "finish")}}
    (tmp_path / "script.json").write_text(json.dumps(script))
    cfg = tmp_path / "llm.toml"
    cfg.write_text(f'[llm]\nprovider = "fake"\nscript = "{tmp_path / "script.json"}"\nretries = 1\nbackoff_s = 0.0\n')
    rc, _ = _sim(tmp_path, "10m", "--main", "llm", "--llm-config", str(cfg))
    s = _summary(capsys.readouterr().out)
    assert rc == 3 and s["final_score"] == "n/a", s
    assert s["why"].startswith("no Worker was started (") and "; the main agent's last error: " in s["why"], s


def test_a_task_directory_whose_train_pool_is_not_named_is_one_line(tmp_path, capsys):
    from tests.tasks.dir.helpers import make_task_dir, write_jsonl

    task = make_task_dir(tmp_path / "task", "exact_match", n=4)
    write_jsonl(task / "train.jsonl", [{"id": f"t-{i}", "question": f"q{i}", "answer": "a"} for i in range(8)])
    run = tmp_path / "run"
    assert main(["run", "--task", str(task), "--budget", "90", "--dir", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no [splits] train names it" in err and 'train = "train.jsonl"' in err
    assert not run.exists()


def test_workers_that_overrun_their_allowance_make_the_main_plan_at_the_measured_rate(tmp_path, capsys):
    """A machine several times slower than the timing model (the world's steps cost 2 s at
    batch 32 where the model prices about 0.5): the first Workers overrun their allowances; the
    Main measures by how much and gives every later Worker an allowance that, at that rate, ends
    before the time kept for the last comparison, and says so in its decisions."""
    flags = flags_from("default").model_copy(update={"seconds_per_step": 2.0})
    land = save_world(generate_world(0, flags), tmp_path / "slow.json")
    budget = 900.0
    rc, run = _sim(tmp_path, "900", land=land)
    s = _summary(capsys.readouterr().out)
    assert rc == 0 and s["selected"] != "n/a" and float(s["spent_s"]) >= 0.8 * budget, s
    with ExpOS.open(run, writable=False) as x:
        graph = load_graph(x.reader)
        jobs = [j for j in graph.jobs if j.kind == "worker"]
        noted = [d for d in graph.decisions if "their allowances" in d.rationale]
        assert noted, [d.rationale for d in graph.decisions]
        end = graph.sessions[0][1] + budget - max(RESERVE_S, RESERVE_FRACTION * budget)
        later = 0
        for w in graph.workers.values():  # each allowance as the Main set it, when it added the Worker
            added = parse_ts(x.run.ledger.get(w.seq).ts)
            f = overrun_factor(k for k in jobs if k.end_ts is not None and k.end_ts <= added)
            if f > 1.0:
                later += 1
                # The Main read the clock a few simulated seconds before the record (door calls take time).
                assert w.direction.seconds * f <= end - added + 5.0, (w.id, w.direction.seconds, f, end - added)
        assert later >= 1


# -- real training ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_150_second_run_spends_its_budget_and_selects_or_says_why(tmp_path):
    """The default task and model at 150 s, one run alone (as a user's first run)."""
    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(tmp_path / "keys")}
    proc = subprocess.run(
        [sys.executable, "-m", "rsi_master.cli", "run", "--budget", "150", "--dir", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    s = _summary(proc.stdout)
    _returned_or_said_why(proc.returncode, s, 150.0)


def test_resuming_a_run_that_recorded_a_worker_with_no_time_is_one_line(tmp_path, capsys):
    """Such a run (a Main once gave a Worker a 0-second allowance on a 10-s budget) is refused
    with one line, not a validation traceback."""
    from rsi_master.expos import Caller
    from tests.orchestra.helpers import new_run

    with new_run(tmp_path, budget_s=10.0) as x:
        direction = {"family": "answer_only", "method": "sft", "seconds": 0}
        x.call(Caller("main", "main"), "worker.add", {"worker_id": "w1", "task": "t", "direction": direction})
        path = x.run.path
    assert main(["resume", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a recorded Worker's direction is invalid (seconds" in err
