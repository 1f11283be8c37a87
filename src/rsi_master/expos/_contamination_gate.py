"""Decontamination at the two gates of the data path: registration and training.

Wraps `rsi_master.expos.contamination` with an index of every protected item of the
contract's task (all three splits: Workers must not train on `dev` items either),
built once per process and task. The task comes from `ExpOS.protected_task`: the run's
own secret-drawn items, not the public splits anyone can regenerate.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["check_rows", "failing_rows"]


@lru_cache(maxsize=8)
def _index(task: Any) -> Any:
    # Keyed by the task instance: the registry hands out one per name and seal key.
    from ..tasks import SPLITS
    from .contamination import build_index, protected_items

    return build_index(protected_items(task, SPLITS))


def check_rows(task: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """{verdict: clean|flagged|failed, index, fails, flags, matches} for training rows.

    `task` holds the protected items: `expos.protected_task()`, never a bare task name."""
    if isinstance(task, str):
        raise TypeError("check_rows needs the run's protected task (ExpOS.protected_task), not a name")
    from .contamination import check

    report = check(_index(task), rows)
    return {
        "verdict": report.verdict,
        "index": report.index_digest,
        "fails": report.rows_failed,
        "flags": report.rows_flagged,
        "matches": [f.model_dump(mode="json", exclude={"evidence"}) for f in report.findings[:20]],
    }


def failing_rows(task: Any, rows: list[dict[str, Any]]) -> set[int]:
    """Indices of the rows the gate fails (every row a failing match spans)."""
    if isinstance(task, str):
        raise TypeError("failing_rows needs the run's protected task (ExpOS.protected_task), not a name")
    from .contamination import check

    out: set[int] = set()
    for f in check(_index(task), rows).findings:
        if f.verdict == "fail":
            out.update(range(f.row, (f.last_row if f.last_row is not None else f.row) + 1))
    return out
