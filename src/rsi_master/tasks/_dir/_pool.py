"""The seam for generator families built on a task directory's `train` pool.

A file task has no hand-written generator; its families come from the pool (SFT on it,
rejection sampling, DPO, GRPO with the scorer as reward), built in `tasks/_pool.py`; without
a pool there is none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._pool import pool_families as _pool_families
from .._protocol import GeneratorFamily

if TYPE_CHECKING:
    from ._file_task import FileTask

__all__ = ["OPENS_WITH", "pool_families"]

# The family a run without a prior opens with (`TaskHints.opens_with`): `tasks/_pool.py`'s SFT
# on the pool's own targets, the first thing anyone tries on a benchmark's train split.
OPENS_WITH = "pool"


def pool_families(task: FileTask) -> dict[str, GeneratorFamily]:
    """The generator families of a file task: its train-pool families (`tasks/_pool.py`), none
    for a task without a `train` pool."""
    return _pool_families(task)
