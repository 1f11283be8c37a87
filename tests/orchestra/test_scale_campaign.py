"""A simulated ten-hour campaign with eight slots on a local Ray cluster of two machines, through
the command line: the simulated clock runs 300 times faster than real time on the driver and in
every task (`--sim-speed`), so ten simulated hours take two real minutes of orchestration,
and the run ends verified and audited clean with its eight slots busy at once.

Each real second a task spends starting (a Ray worker, a Python process, opening the run) is
`--sim-speed` simulated seconds of its allowance: at 600 the CI machine, with other scale-out
tests beside it, measured its trials that much longer, and the Main, sizing new Workers at that
measured rate, stopped with half the ten hours left (17,659 s spent; 45 experiments in another
run). At 300 a loaded machine still leaves the campaign most of its simulated time to work in."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests import ray_cluster

ray_cluster.require_ray()

pytestmark = pytest.mark.scale


def _cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "rsi_master.cli", *args], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (args, done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout


def test_a_simulated_ten_hour_campaign_on_ray_with_eight_slots_verifies_and_audits_clean(tmp_path, monkeypatch):
    from rsi_master.expos import ExpOS
    from rsi_master.orchestra import load_graph

    monkeypatch.delenv("RSI_MASTER_LEDGER", raising=False)
    run = tmp_path / "run"
    # Two machines of four logical CPUs: a slot's task asks for one, so all eight slots run at once.
    with ray_cluster.cluster(2, cpus=4) as cluster:
        out = _cli(
            "run", "--backend", "sim", "--world-seed", "3", "--budget", "10h", "--slots", "8",
            "--dir", str(run), "--executor", "ray", "--ray-address", cluster.address, "--sim-speed", "300",
        )  # fmt: skip
    summary = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    assert float(summary["budget_s"]) == 36000.0
    # Ten simulated hours were spent, not cut short.
    assert float(summary["spent_s"]) > 0.9 * 36000.0, out[-3000:]
    assert int(summary["workers"]) >= 16 and int(summary["experiments"]) >= 50, out[-3000:]
    assert float(summary["hacking_rate"]) == 0.0
    assert "problems: 0" in _cli("verify", str(run))
    assert "flagged: none" in _cli("audit", str(run))
    with ExpOS.open(run, writable=False) as x:
        g = load_graph(x.reader)
    assert g.open_jobs() == [] and {j.slot for j in g.jobs} == set(range(8))
    # Eight jobs ran at once at some instant: the campaign used its eight slots in parallel.
    edges = sorted([(j.start_ts, 1) for j in g.jobs] + [(j.end_ts, -1) for j in g.jobs], key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    assert peak == 8
