"""The Ray executor on a local cluster of two nodes on this machine: the unchanged scheduler runs its
nodes as Ray tasks on both machines, a killed task or a lost node is the job's failure and the
campaign goes on, and a simulated campaign on Ray ends verified and audited clean."""

from __future__ import annotations

import io
import threading
import time

import pytest

from rsi_master.errors import RsiMasterError
from rsi_master.orchestra import PlainDisplay, RunSpec, Scheduler, load_graph, start_run
from rsi_master.rundir import verify_run
from tests import ray_cluster

from .helpers import new_run

ray_cluster.require_ray()

from rsi_master.orchestra._ray import RayExecutor  # noqa: E402  (after the skip)


@pytest.fixture(scope="module")
def cluster():
    """Two Ray nodes on this machine, one CPU each (a slot's task asks for one: two slots run on two nodes)."""
    with ray_cluster.cluster(2) as c:
        yield c


def _overlapping(jobs) -> bool:
    return any(a is not b and a.start_ts < b.end_ts and b.start_ts < a.end_ts for a in jobs for b in jobs)


@pytest.mark.slow
@pytest.mark.scale
def test_the_unchanged_scheduler_runs_its_nodes_as_ray_tasks_on_both_nodes(tmp_path, cluster):
    with new_run(tmp_path, budget_s=6.0, slots=2, main="tests.orchestra.helpers:FillMain") as expos:
        sched = Scheduler(expos, PlainDisplay(io.StringIO()), poll_s=0.1, executor=RayExecutor())
        sched.start()
        assert sched.drive() == "budget spent"
        g = load_graph(expos.reader)
        assert g.open_jobs() == [] and {j.slot for j in g.jobs} == {0, 1}
        assert [j.status for j in g.jobs if j.status != "done"] == []
        # Each node has one CPU and each task asks for one: two jobs at once ran on two machines.
        assert _overlapping(g.jobs)
        assert all(w.done for w in g.workers.values() if any(j.node == w.id for j in g.jobs))
    assert verify_run(tmp_path / "run").ok


@pytest.mark.slow
@pytest.mark.scale
def test_a_killed_task_is_the_jobs_failure_and_the_campaign_goes_on(tmp_path, cluster):
    with new_run(tmp_path, budget_s=60.0, slots=1, main="tests.orchestra.helpers:KilledMain") as expos:
        sched = Scheduler(expos, PlainDisplay(io.StringIO()), poll_s=0.1, executor=RayExecutor())
        sched.start()
        # The task's process is SIGKILLed twice: two failed jobs, the node abandoned, the run ends.
        assert sched.drive() == "no work left"
        g = load_graph(expos.reader)
        assert [j.status for j in g.jobs] == ["failed", "failed"]
        assert [e.payload["node"] for e in expos.events("orchestra.abandon")] == ["s1"]
    assert verify_run(tmp_path / "run").ok


@pytest.mark.slow
@pytest.mark.scale
def test_a_lost_node_is_the_jobs_failure_and_the_campaign_goes_on(tmp_path, cluster):
    doomed = cluster.add_node(num_cpus=1, resources={"doomed": 1})
    cluster.wait_for_nodes()
    try:
        with new_run(tmp_path, budget_s=40.0, slots=1, main="tests.orchestra.helpers:LongFillMain") as expos:
            # The only slot's tasks ask for the doomed node's resource, so the first one runs there.
            executor = RayExecutor()
            executor.resources = {"doomed": 1}
            sched = Scheduler(expos, PlainDisplay(io.StringIO()), poll_s=0.1, executor=executor)

            def lose_the_node() -> None:
                while not load_graph_jobs(tmp_path):
                    time.sleep(0.1)
                time.sleep(6.0)  # the task has started on the doomed node (it sleeps 15 s there)
                # Later tasks run on the nodes that are left: cleared first, so the relaunch that
                # follows the loss never asks for the lost node's resource (it would wait forever).
                executor.resources = {}
                cluster.remove_node(doomed)

            killer = threading.Thread(target=lose_the_node, daemon=True)
            killer.start()
            sched.start()
            sched.drive()
            killer.join(timeout=30)
            g = load_graph(expos.reader)
            assert g.jobs[0].status == "failed"
            assert "done" in [j.status for j in g.jobs[1:]]  # the campaign went on without the node
        assert verify_run(tmp_path / "run").ok
    finally:
        if doomed in cluster.list_all_nodes():
            cluster.remove_node(doomed)


def load_graph_jobs(tmp_path) -> list:
    from rsi_master.expos import ExpOS

    with ExpOS.open(tmp_path / "run", writable=False) as x:
        return x.events("orchestra.job.start")


@pytest.mark.slow
@pytest.mark.scale
@pytest.mark.parametrize("artifacts", ["run directory", "shared store"])
def test_a_simulated_campaign_on_ray_ends_verified_and_audited_clean(tmp_path, cluster, monkeypatch, artifacts):
    from rsi_master.expos import ExpOS, audit
    from rsi_master.sim import generate_world

    # The shared store: the nodes' tasks write their outputs to it and read their inputs from it by digest.
    monkeypatch.setenv("RSI_MASTER_ARTIFACTS", f"file://{tmp_path}/shared" if artifacts == "shared store" else "")

    summary = start_run(
        RunSpec(
            budget="60s",
            backend="sim",
            world=generate_world(1),
            slots=2,
            run_dir=tmp_path / "sim",
            executor="ray",
        ),
        display=PlainDisplay(io.StringIO()),
    )
    assert summary["experiments"] >= 4 and summary["workers"] >= 2
    assert summary["hacking_rate"] == 0.0
    assert verify_run(tmp_path / "sim").problems == []
    with ExpOS.open(tmp_path / "sim") as x:
        assert audit(x).flagged == []
        g = load_graph(x.reader)
        if artifacts == "shared store":
            referenced = {d for (d,) in x.run.ledger.connection.execute("SELECT digest FROM artifact_refs")}
            assert referenced and referenced <= set(x.run.store.digests())
            assert x.run.store.shared.url.startswith(f"file://{tmp_path}/shared/")
    assert _overlapping(g.jobs)


def test_a_ray_address_without_the_ray_executor_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(RsiMasterError, match="--ray-address is for --executor ray"):
        start_run(
            RunSpec(task="knowledge", budget="60s", run_dir=tmp_path / "r", ray_address="auto", executor="process")
        )
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
@pytest.mark.scale
def test_a_killed_driver_is_resumed_on_ray_and_the_run_verifies(tmp_path, cluster):
    import signal
    import subprocess
    import sys

    from rsi_master.expos import ExpOS, audit
    from rsi_master.orchestra import resume_run

    run_dir = tmp_path / "crash"
    cmd = [sys.executable, "-m", "rsi_master.cli", "run", "--backend", "sim", "--world-seed", "1"]
    cmd += ["--budget", "60s", "--slots", "2", "--dir", str(run_dir), "--executor", "ray"]
    cmd += ["--ray-address", cluster.address]
    driver = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not (run_dir.is_dir() and load_graph_jobs_at(run_dir) >= 3):
            time.sleep(0.5)
        assert driver.poll() is None, "the driver ended before it could be killed"
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    summary = resume_run(run_dir, display=PlainDisplay(io.StringIO()), executor="ray")
    assert summary["experiments"] >= 1
    assert verify_run(run_dir).problems == []
    with ExpOS.open(run_dir) as x:
        g = load_graph(x.reader)
        assert audit(x).flagged == []
    assert len(g.sessions) == 2 and g.open_jobs() == []
    assert "interrupted" in [j.status for j in g.jobs]  # the jobs the killed driver left open


def load_graph_jobs_at(run_dir) -> int:
    from rsi_master.expos import ExpOS

    try:
        with ExpOS.open(run_dir, writable=False) as x:
            return len(x.events("orchestra.job.start"))
    except Exception:  # the run is still being created
        return 0


@pytest.mark.slow
@pytest.mark.scale
def test_ray_tasks_run_without_the_key_directory_and_the_campaign_verifies(tmp_path, cluster):
    from rsi_master.expos import ExpOS, audit

    nowhere = tmp_path / "no-key-directory-here"
    with new_run(tmp_path, budget_s=6.0, slots=2, main="tests.orchestra.helpers:FillMain") as expos:
        executor = RayExecutor()
        # Were a task to look for a key directory, the only one it could find is one that does not exist.
        executor.runtime_env = {"env_vars": {"RSI_MASTER_KEY_DIR": str(nowhere), "XDG_CONFIG_HOME": str(nowhere)}}
        try:
            sched = Scheduler(expos, PlainDisplay(io.StringIO()), poll_s=0.1, executor=executor)
            sched.start()
            assert sched.drive() == "budget spent"
        finally:
            executor.close()
        g = load_graph(expos.reader)
        assert len(g.jobs) >= 2 and [j.status for j in g.jobs if j.status != "done"] == []
        assert _overlapping(g.jobs)  # on both nodes, each writing and getting its heads signed at once
    assert verify_run(tmp_path / "run").problems == []
    with ExpOS.open(tmp_path / "run") as x:
        assert audit(x).flagged == []
        assert x.events("guard.blocked") == []
    assert not nowhere.exists()


def _attack(run_dir: str, token: str, keeper, nowhere: str) -> dict:
    """A job on the other node holding only its capability (and the keeper's handle, as a task
    does) tries for the key directory, a forged event and the seal secret."""
    import os
    import pickle

    import ray

    from rsi_master.errors import LedgerError
    from rsi_master.expos import ExpOS
    from rsi_master.orchestra._keeper import DriverKeys
    from rsi_master.orchestra._ray import keeper_call

    os.environ["RSI_MASTER_KEY_DIR"] = nowhere
    out: dict = {}
    try:
        ExpOS.open(run_dir).close()
        out["open"] = "opened for writing"
    except RsiMasterError as exc:
        out["open"] = str(exc)
    with ExpOS.open(run_dir, key_dir=DriverKeys(keeper_call(ray, keeper), token), gate_process=True) as job:
        caller = job.authenticate(token)
        try:
            job.run.record({"kind": "orchestra.stop", "actor": {"role": "harness", "id": "orchestra"}, "payload": {}})
            out["forged"] = "written"
        except LedgerError as exc:
            out["forged"] = str(exc)
        job.run.record({"kind": "worker.note", "actor": caller.actor(), "payload": {"own": True}})
        out["seal"] = pickle.dumps(job.seal_key())
        try:
            job.protected_task()
            out["items_here"] = "drawn in the job's process"
        except RsiMasterError as exc:
            out["items_here"] = str(exc)
        out["drawn"] = job.gate().pinned({"final": 10**6})["final"][1]  # drawn by its gate, from the seeds
    forged_token = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    try:
        ray.get(keeper.seal_key.remote(forged_token, None))
        out["forged_capability"] = "answered"
    except Exception as exc:
        out["forged_capability"] = type(exc).__name__ + ": " + str(exc)
    return out


@pytest.mark.slow
@pytest.mark.scale
def test_a_job_holding_only_its_capability_gets_no_key_no_seal_secret_and_no_forged_event(tmp_path, cluster, key_dir):
    import pickle

    import ray

    from rsi_master.expos import ExpOS

    nowhere = str(tmp_path / "no-key-directory-here")
    with new_run(tmp_path) as expos:
        token = expos.issue("worker", "w9")
        run_id = expos.run.run_id
        full = [i.sample_id for i in expos.protected_task().eval_items("final")]
        executor = RayExecutor()
        try:
            keeper = executor.keeper(str(tmp_path / "run"), str(key_dir))
            other = next(
                n["NodeID"]
                for n in ray.nodes()
                if n["Alive"] and n["NodeID"] != ray.get_runtime_context().get_node_id()
            )
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            attack = ray.remote(_attack).options(
                num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=other, soft=False)
            )
            out = ray.get(attack.remote(str(tmp_path / "run"), token, keeper, nowhere), timeout=300)
            # A keeper that dies is replaced at the next job's start (once it wrote the refusals it queued).
            deadline = time.monotonic() + 60
            while len(expos.events("guard.blocked")) < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
            ray.kill(keeper)  # asynchronous: until the actor is gone it still answers the executor's ping
            gone = time.monotonic() + 60
            while time.monotonic() < gone:
                try:
                    ray.get(keeper.vouch.remote(token), timeout=10)
                except Exception:
                    break
                time.sleep(0.2)
            again = executor.keeper(str(tmp_path / "run"), str(key_dir))
            assert again != keeper and ray.get(again.vouch.remote(token))[0] == expos.run.ledger.size()
        finally:
            executor.close()
    assert "no signing key" in out["open"] or "key directory" in out["open"]
    assert "not as the capability's holder" in out["forged"]
    assert "CapabilityError" in out["forged_capability"]
    # What the job got of the seal: the seeds of this run's splits, which its gate (an evaluator
    # process of its own) draws the protected items from; the job's process draws none, and neither
    # the seal secret nor the signing key is among anything it holds.
    seal = pickle.loads(out["seal"])
    assert seal.secret is None and out["drawn"] == full
    assert "evaluator processes only" in out["items_here"]
    secret = (key_dir / "seals" / f"{run_id}.key").read_text().strip()
    signing = b"".join(p.read_bytes() for p in key_dir.glob("*.pem"))
    everything = pickle.dumps(out)
    assert bytes.fromhex(secret) not in everything and secret.encode() not in everything
    assert signing.split(b"\n")[1] not in everything
    assert verify_run(tmp_path / "run").problems == []
    with ExpOS.open(tmp_path / "run") as x:
        refused = x.events("guard.blocked")
        assert {e.actor.id for e in refused} == {"w9", "unauthenticated"}
        assert [e.payload["own"] for e in x.events("worker.note")] == [True]
