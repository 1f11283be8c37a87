"""Decontamination at the two gates of the data path: registration and training.

Wraps `rsi_master.expos.contamination` with an index of every protected item of the
contract's task (all three splits: Workers must not train on `dev` items either),
built once per process and task. The task comes from `ExpOS.protected_task`: the run's
own secret-drawn items, not the public splits anyone can regenerate.
"""

from __future__ import annotations

from collections.abc import Hashable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

from ..tasks import SPLITS

if TYPE_CHECKING:
    from ..tasks import Task

__all__ = ["check_bytes", "check_rows", "failing_rows"]


def _index(task: Task) -> Any:
    return _index_of(cast("Hashable", task))


@lru_cache(maxsize=8)
def _index_of(task: Hashable) -> Any:
    # Keyed by the task instance: the registry hands out one per name and seal key.
    from .contamination import build_index, protected_items

    return build_index(protected_items(cast("Task", task), SPLITS))


def check_rows(task: Task, rows: list[dict[str, Any]]) -> dict[str, Any]:
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


_REPORTS: dict[tuple[Any, str], dict[str, Any]] = {}


def check_bytes(task: Task, data: bytes, rows: list[dict[str, Any]] | None = None, check: Any = None) -> dict[str, Any]:
    """`check_rows` over a JSONL file's bytes (`rows`: those bytes parsed, if the caller has them).

    The report is a function of the bytes and the protected items, so it is kept per task and
    digest of the bytes: the same dataset checked at registration, before training and at each
    audit is read and hashed each time, and gated once (a campaign's audits re-read every
    dataset of the run). `check` is the gate to run on a miss (`check_rows` unless given)."""
    import copy
    import hashlib

    key = (task, hashlib.sha256(data).hexdigest())
    got = _REPORTS.get(key)
    if got is None:
        if rows is None:
            from ..runtime import parse_jsonl

            rows = parse_jsonl(data, "dataset")
        got = (check or check_rows)(task, rows)
        if len(_REPORTS) > 4096:
            _REPORTS.clear()
        _REPORTS[key] = got
    return copy.deepcopy(got)


def failing_rows(task: Task, rows: list[dict[str, Any]]) -> set[int]:
    """Indices of the rows the gate fails (every row a failing match spans)."""
    if isinstance(task, str):
        raise TypeError("failing_rows needs the run's protected task (ExpOS.protected_task), not a name")
    from .contamination import check

    out: set[int] = set()
    for f in check(_index(task), rows).findings:
        if f.verdict == "fail":
            out.update(range(f.row, (f.last_row if f.last_row is not None else f.row) + 1))
    return out
