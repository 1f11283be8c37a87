"""The seam for generator families built on a task directory's `train` pool.

A file task has no hand-written generator; its families come from the pool (SFT on it,
rejection sampling, DPO, GRPO with the scorer as reward). Those are built in the train-pool
directions work (issue 21, item 3), which fills `pool_families`; without a pool there is none.
"""

from __future__ import annotations

from typing import Any

from .._protocol import GeneratorFamily

__all__ = ["pool_families"]


def pool_families(task: Any) -> dict[str, GeneratorFamily]:
    """The generator families of a file task: {} until the train-pool families are built, and
    always {} for a task without a `train` pool."""
    if not task.train_pool():
        return {}
    return {}
