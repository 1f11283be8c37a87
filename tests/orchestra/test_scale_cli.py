"""A campaign across machines through the command line, as an operator runs it: `rsi-master run
--executor ray` on a local Ray cluster of two nodes with its ledger in PostgreSQL; one Ray node
is lost mid-experiment and the driver is killed, `rsi-master resume` finishes the run, and then
`verify` finds no problem, `audit` flags nothing and `export` writes a run directory that
verifies on its own. The simulated backend on a scaled clock (`--sim-speed`) keeps it CPU-cheap
while its experiments still take seconds, so a node dies while one runs."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from tests import ray_cluster

ray_cluster.require_ray()

pytestmark = pytest.mark.scale

SPEED = "10"  # simulated seconds per real second: a simulated training step of minutes takes seconds


@pytest.fixture
def cluster():
    """Two Ray nodes, one CPU each; the test removes the second one (its own cluster)."""
    with ray_cluster.cluster(2) as c:
        yield c


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "rsi_master.cli", *args], capture_output=True, text=True, timeout=600)
    if check:
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    return done


def _jobs(run_dir) -> list:
    """The run's jobs as the ledger has them so far (an open job's status is None)."""
    from rsi_master.expos import ExpOS
    from rsi_master.orchestra import load_graph

    try:
        with ExpOS.open(run_dir, writable=False) as x:
            return load_graph(x.reader).jobs
    except Exception:  # the run is still being created
        return []


def _wait_for(what: str, cond, run_dir, driver: subprocess.Popen, timeout: float = 240.0) -> list:
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert driver.poll() is None, (
            f"the driver ended (rc {driver.returncode}) before {what}:\n{(run_dir.parent / 'driver.log').read_text()[-3000:]}"
        )
        jobs = _jobs(run_dir)
        if cond(jobs):
            return jobs
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_campaign_on_ray_and_postgres_survives_a_lost_node_and_a_killed_driver(
    tmp_path, cluster, postgres, monkeypatch
):
    monkeypatch.delenv("RSI_MASTER_LEDGER", raising=False)
    run = tmp_path / "run"
    worker_node = cluster.list_all_nodes()[1]
    cmd = [sys.executable, "-m", "rsi_master.cli", "run", "--backend", "sim", "--world-seed", "1"]
    cmd += ["--budget", "12m", "--sim-speed", SPEED, "--slots", "2", "--dir", str(run)]
    cmd += ["--executor", "ray", "--ray-address", cluster.address, "--ledger", postgres.writer_url]
    log = tmp_path / "driver.log"
    with log.open("w") as out:
        driver = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        # Two jobs running at once on two one-CPU nodes: one of them runs on the second node. The
        # ledger has a job from its submission on, so both must still be open seconds later (Ray
        # has placed them; a Worker runs to its deadline, minutes of simulated time).
        seen: dict[str, float] = {}

        def both_placed(jobs) -> bool:
            open_now = {j.node for j in jobs if j.end_ts is None}
            for node in list(seen):
                if node not in open_now:
                    del seen[node]
            for node in open_now:
                seen.setdefault(node, time.time())
            return len(seen) == 2 and all(time.time() - t > 5.0 for t in seen.values())

        _wait_for("two jobs ran at once", both_placed, run, driver)
        ray_cluster.lose_node(cluster, worker_node)
        jobs = _wait_for("the lost node's job ended as failed", lambda jobs: "failed" in _statuses(jobs), run, driver)
        failed_at = len(jobs)
        _wait_for("the campaign went on", lambda jobs: len(jobs) > failed_at, run, driver)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()

    resumed = _cli("resume", str(run), "--executor", "ray", "--ray-address", cluster.address, "--sim-speed", SPEED)
    assert "experiments: " in resumed.stdout
    statuses = _statuses(_jobs(run))
    assert "failed" in statuses and "interrupted" in statuses and None not in statuses
    assert "problems: 0" in _cli("verify", str(run)).stdout
    assert "flagged: none" in _cli("audit", str(run)).stdout
    out = tmp_path / "export"
    assert "verify: ok" in _cli("export", str(run), "--to", str(out)).stdout
    # The copy verifies on its own: an ordinary SQLite run directory, read with no operator keys.
    monkeypatch.setenv("RSI_MASTER_KEY_DIR", str(tmp_path / "no-keys"))
    assert (out / "ledger.db").is_file() and not (out / "ledger.pg").exists()
    assert "problems: 0" in _cli("verify", str(out), "--checkpoint", str(out / "witness.json")).stdout


def _statuses(jobs) -> list:
    return [j.status if j.end_ts is not None else None for j in jobs]
