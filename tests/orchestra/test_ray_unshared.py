"""A campaign on Ray with no filesystem shared between the driver and its tasks: the ledger in
PostgreSQL, the artifacts on an S3 server, and each task told a run directory path that its
machine does not have. The tasks open the run from a run directory of their own made of the files
the driver shipped, reach the store with the S3 settings the driver shipped (the Ray nodes were
started without them), and the campaign ends verified and audited clean."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from rsi_master.artifacts import ArtifactStore
from rsi_master.orchestra import PlainDisplay, RunSpec, load_graph, start_run
from rsi_master.rundir import verify_run
from tests import ray_cluster

ray_cluster.require_ray()

from rsi_master.orchestra import _ray  # noqa: E402  (after the skip)
from rsi_master.orchestra._shipped import SHIPPED_FILES, cache_root  # noqa: E402

pytestmark = [pytest.mark.scale, pytest.mark.slow]

ELSEWHERE = ".not-on-this-machine"


@pytest.fixture(scope="module")
def cluster():
    """Two Ray nodes, one CPU each, started before the test's S3 settings exist (as `ray start` without them)."""
    with ray_cluster.cluster(2) as c:
        yield c


def _task_without_the_run_directory(launch, clock=None, keeper=None, shipped=None) -> int:
    """A node's task on a machine where the driver's run directory path does not exist. What it
    left in this machine's copy of the run goes beside the run directory for the test to read
    (the driver removes the copies when the run ends)."""
    from rsi_master.orchestra._ray import ray_node

    absent = launch.run_dir + ELSEWHERE
    assert not os.path.exists(absent) and "AWS_ENDPOINT_URL" not in os.environ
    rc = ray_node(dataclasses.replace(launch, run_dir=absent), clock, keeper, shipped)
    local = cache_root() / shipped.run_id
    seen = {
        "files": sorted(os.listdir(local)),
        "shipped": {name: (local / name).read_bytes().decode() for name in SHIPPED_FILES},
        "artifacts": sorted(ArtifactStore(local / "artifacts").digests()),
    }
    out = Path(launch.run_dir + ".seen")
    out.mkdir(exist_ok=True)
    (out / f"{launch.node}.json").write_text(json.dumps(seen))
    return rc


def test_a_campaign_on_postgres_and_s3_runs_on_ray_without_a_shared_run_directory(
    tmp_path, cluster, postgres, s3, monkeypatch
):
    from rsi_master.expos import ExpOS, audit
    from rsi_master.sim import generate_world

    monkeypatch.setenv("RSI_MASTER_LEDGER", postgres.writer_url)
    monkeypatch.setenv("RSI_MASTER_ARTIFACTS", s3)
    monkeypatch.setattr(_ray, "ray_node", _task_without_the_run_directory)
    run = tmp_path / "sim"
    # A wall-clock budget: alone it runs about 26 experiments in 60 s; on the CI machine with other
    # scale-out tests beside it, 60 s ended with none finished, so it gets two minutes.
    summary = start_run(
        RunSpec(budget="120s", backend="sim", world=generate_world(1), slots=2, run_dir=run, executor="ray"),
        display=PlainDisplay(io.StringIO()),
    )
    with ExpOS.open(run) as x:
        run_id = x.run.run_id
        jobs = load_graph(x.reader).jobs
        assert audit(x).flagged == []
        stored = set(x.run.store.digests())
    local = cache_root() / run_id
    try:
        assert summary["experiments"] >= 4 and summary["workers"] >= 2, {k: summary[k] for k in ("experiments", "jobs")}
        assert summary["hacking_rate"] == 0.0
        assert jobs and all(j.status in ("done", "stopped") for j in jobs), [(j.node, j.status) for j in jobs]
        assert verify_run(run).problems == []
        # Each task ran from this machine's copy: the shipped files and its own artifact cache, nothing else.
        assert not (tmp_path / f"sim{ELSEWHERE}").exists()
        seen = [json.loads(p.read_text()) for p in sorted((tmp_path / "sim.seen").glob("*.json"))]
        assert seen and len(seen) <= len(jobs)  # a task cancelled mid-way writes nothing
        assert all(set(s["files"]) <= {*SHIPPED_FILES, "artifacts", "scratch"} for s in seen)
        assert all(s["shipped"] == {n: (run / n).read_text() for n in SHIPPED_FILES} for s in seen)
        written = {d for s in seen for d in s["artifacts"]}
        assert written and written <= stored  # the tasks' outputs went up to the S3 store by digest
        # The driver removed the copy when the run's scheduling ended; the run itself is whole.
        assert not local.exists()
    finally:
        shutil.rmtree(local, ignore_errors=True)
