"""Every seed the Main puts in a direction, from one place.

A Worker draws its data and its training order from its direction's seed, so two Workers
with one seed, one recipe and one parent train the same weights (the audit then rightly sees
one checkpoint scored twice on dev: repeated-run selection). The rules below keep every
Worker's seed its own and reproducible from the run's seed and the graph:

* a family's fresh direction: `run seed * FAMILY_STRIDE + the family's index` (sorted
  families, fewer than `FAMILY_STRIDE` per task);
* a failed review's redo from the base: the direction's seed `+ REDO_OFFSET` (fresh data);
* a continuation of a verified checkpoint: the seed `+ CONTINUE_OFFSET` (data past what the
  verified trials drew);
* the Worker that runs it: `worker number * WORKER_STRIDE + direction seed mod WORKER_STRIDE`,
  unique per Worker whatever the direction seed (a prime stride, larger than any seed the
  rules above make in a run of fewer than about a thousand workers).
"""

from __future__ import annotations

__all__ = [
    "CONTINUE_OFFSET",
    "FAMILY_STRIDE",
    "REDO_OFFSET",
    "WORKER_STRIDE",
    "continue_seed",
    "family_seed",
    "redo_seed",
    "worker_seed",
]

FAMILY_STRIDE = 100
REDO_OFFSET = 17
CONTINUE_OFFSET = 1000
WORKER_STRIDE = 100_003


def family_seed(run_seed: int, index: int) -> int:
    """The seed of the fresh direction of the task's `index`-th family (sorted by name)."""
    return run_seed * FAMILY_STRIDE + index


def redo_seed(seed: int) -> int:
    """The seed of a direction redone from the base after a failed review."""
    return seed + REDO_OFFSET


def continue_seed(seed: int) -> int:
    """The seed of a direction that continues a verified checkpoint."""
    return seed + CONTINUE_OFFSET


def worker_seed(worker_number: int, direction_seed: int) -> int:
    """The seed the Worker `w<worker_number>` runs its direction with."""
    return worker_number * WORKER_STRIDE + direction_seed % WORKER_STRIDE
