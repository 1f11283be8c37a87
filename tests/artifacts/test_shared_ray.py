"""A 2 GB artifact across machines: a Ray task on one node of a two-node cluster on loopback stores
it in the run's shared store (through fsspec), a task on the other node reads it back by digest,
and each measures its own memory: the traced peak and the growth of its resident set stay a few
4 MiB chunks, not the file. The file is sparse, so making it costs neither memory nor disk.

On a shared path with 2 GB. Through the S3-compatible test server with 256 MiB (the server, moto,
assembles an upload in its own memory, the test process's, so 2 GB there would load the machine,
not the nodes): s3fs and botocore hold about 40 MiB while uploading, whatever the file's size."""

from __future__ import annotations

import os
import shutil
import tracemalloc
from pathlib import Path

import pytest

from tests import ray_cluster

pytest.importorskip("fsspec")
ray_cluster.require_ray()

MiB = 1 << 20


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def _measured(work):
    """(what `work()` returns, traced peak bytes, resident-set growth bytes) of this process."""
    # The high-water mark of the resident set is reset to now (Linux's clear_refs), so the peak
    # read after is this work's, not whatever the worker process did before.
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    before = _status_kib("VmRSS")
    tracemalloc.start()
    try:
        out = work()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, peak, (_status_kib("VmHWM") - before) * 1024


def put_on_this_node(url: str, cache: str, src: str, size: int) -> dict:
    import ray

    from rsi_master.artifacts import SharedArtifactStore

    with open(src, "wb") as fh:
        fh.truncate(size)  # sparse: zeros on no disk blocks
    store = SharedArtifactStore(url, cache)
    digest, peak, rss = _measured(lambda: store.put_file(src, move=True))
    return {"node": ray.get_runtime_context().get_node_id(), "digest": digest, "peak": peak, "rss": rss}


def read_on_this_node(url: str, cache: str, digest: str) -> dict:
    import ray

    from rsi_master.artifacts import SharedArtifactStore

    store = SharedArtifactStore(url, cache)
    path, peak, rss = _measured(lambda: store.path(digest))  # fetched, hashed as written, refused unless it matches
    size = os.stat(path).st_size
    os.chmod(os.path.dirname(path), 0o755)
    os.unlink(path)  # the disk back before the next test
    return {"node": ray.get_runtime_context().get_node_id(), "size": size, "peak": peak, "rss": rss}


@pytest.fixture(scope="module")
def cluster():
    with ray_cluster.cluster(2) as c:
        yield c


@pytest.mark.scale
@pytest.mark.parametrize(("backend", "size"), [("file", 2 << 30), ("s3", 256 * MiB)])
def test_a_large_artifact_put_on_one_node_is_read_on_the_other_with_flat_memory(
    tmp_path, cluster, request, backend, size
):
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    env = {}
    if backend == "file":
        url = f"file://{tmp_path}/shared"  # a shared filesystem path, as on a cluster with NFS
    else:
        url = request.getfixturevalue("s3")
        env = {k: os.environ[k] for k in os.environ if k.startswith("AWS_")}
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
    assert len(nodes) == 2

    def on(node: str, fn):
        strategy = NodeAffinitySchedulingStrategy(node_id=node, soft=False)
        return ray.remote(fn).options(scheduling_strategy=strategy, max_retries=0, runtime_env={"env_vars": env})

    src = str(tmp_path / "ckpt.bin")
    try:
        put = ray.get(on(nodes[0], put_on_this_node).remote(url, str(tmp_path / "a"), src, size))
        got = ray.get(on(nodes[1], read_on_this_node).remote(url, str(tmp_path / "b"), put["digest"]))
        if backend == "file":
            blob = Path(f"{tmp_path}/shared/objects/{put['digest'][:2]}/{put['digest'][2:]}")
            assert blob.stat().st_size == size
    finally:
        shutil.rmtree(tmp_path / "shared", ignore_errors=True)  # 2 GB of disk back at once
    assert (put["node"], got["node"]) == (nodes[0], nodes[1])
    assert got["size"] == size
    for side, what in ((put, "put"), (got, "read")):  # the figures docs/scale-out.md gives (pytest -s)
        print(f"{backend} {size >> 20} MiB {what}: {side['peak'] >> 10} KiB traced, {side['rss'] >> 10} KiB resident")
    flat = {"file": (16 * MiB, 64 * MiB), "s3": (64 * MiB, 128 * MiB)}[backend]  # (traced, resident)
    for side in (put, got):
        assert side["peak"] < flat[0] and side["rss"] < flat[1], side  # a few chunks, not the file
