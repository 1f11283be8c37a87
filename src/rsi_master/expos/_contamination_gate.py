"""Decontamination at the two gates of the data path: registration and training.

Wraps `rsi_master.expos.contamination` with an index of every protected item of the
contract's task (all three splits), built once per process.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["check_rows", "read_rows"]


@lru_cache(maxsize=8)
def _index(task: str) -> Any:
    from ..tasks import SPLITS, get_task
    from .contamination import index_task

    return index_task(get_task(task), SPLITS)


def read_rows(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def check_rows(task: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """{verdict: clean|flagged|failed, index, fails, flags, matches: [...]} for training rows."""
    from .contamination import check

    report = check(_index(task), rows)
    return report_summary(report)


def report_summary(report: Any) -> dict[str, Any]:
    data = report.model_dump(mode="json")
    return {
        "verdict": data["verdict"],
        "index": data.get("index_digest", ""),
        "fails": data.get("n_fail", 0),
        "flags": data.get("n_flag", 0),
        "matches": data.get("matches", [])[:20],
    }
