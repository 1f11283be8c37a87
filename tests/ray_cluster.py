"""A local Ray cluster for the scale-out tests: a head and more nodes on loopback, one logical CPU
each unless asked (a slot's task asks for one, so two slots run on two nodes), torn down on exit.

Without Ray the tests skip, except under CI=true, where that is a failure (CI installs the
`scale` extra, so a missing Ray is a broken set-up, not a machine without it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pytest


def require_ray() -> None:
    """Skip (fail under CI=true) where Ray is not installed. Imports nothing: the modules that call
    it are collected by every test run, whose workers need not load Ray to deselect them."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Ray is missing under CI=true (./setup.sh installs the scale extra)")
        pytest.skip("no Ray here: pip install 'rsi-master[scale]'", allow_module_level=True)


@contextlib.contextmanager
def cluster(nodes: int = 2, cpus: int = 1) -> Iterator[Any]:
    """`nodes` Ray nodes on this machine (the first is the head) of `cpus` logical CPUs each, this
    process connected to them."""
    require_ray()
    import ray
    import ray.cluster_utils as cluster_utils

    from rsi_master.orchestra._ray import RAY_QUIET_ENV

    for key, value in RAY_QUIET_ENV.items():
        os.environ.setdefault(key, value)
    c = cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": cpus,
            "include_dashboard": False,
            # A lost node is noticed in about a second, not Ray's default of tens of seconds.
            "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 2},
        },
    )
    try:
        for _ in range(nodes - 1):
            c.add_node(num_cpus=cpus)
        ray.init(address=c.address)
        c.wait_for_nodes()
        yield c
    finally:
        ray.shutdown()
        c.shutdown()


def lose_node(c: Any, node: Any) -> None:
    """The machine of `node` is gone: its raylet and every process under it (the workers running
    tasks) are SIGKILLed at once, then the node's other processes. Killing the raylet alone is
    not a lost machine: its workers live on and return their results to the driver."""
    import signal

    raylet = node.all_processes["raylet"][0].process.pid
    for pid in [raylet, *descendants(raylet)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    c.remove_node(node, allow_graceful=False)


def descendants(root: int) -> list[int]:
    """Every process under `root` (children, theirs, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
