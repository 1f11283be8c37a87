"""What the scheduler hands an executor to start one node (shared by every executor)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NodeLaunch"]


@dataclass(frozen=True)
class NodeLaunch:
    """What a node needs to run: the arguments of `_job.job_main`, less the executor's own."""

    run_dir: str
    key_dir: str | None
    kind: str
    node: str
    deadline: float
    seed: int
    reviewer: str
    parent_pid: int
    slots: int
    capability: str
