"""The measured landscape (base, reference and recipe-family scores per task).

`landscape.json` is written by `scripts/measure_landscape.py` from real runs; nothing
in it is typed by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

LANDSCAPE_PATH = Path(__file__).with_name("landscape.json")
# The batch size of the landscape's curves; a curve measured at another batch N is labelled
# `<label>@bN` (a run of it `<label>@bN@sS`) and compared only with curves at that batch.
CURVE_BATCH = 8


def load_landscape() -> dict[str, Any]:
    """The committed measurements, or an empty record if none were made yet."""
    if not LANDSCAPE_PATH.is_file():
        return {"tasks": {}}
    return dict(json.loads(LANDSCAPE_PATH.read_text()))


def task_curves(landscape: dict[str, Any], task: str) -> dict[str, Any]:
    """A task's curves (label -> measured curve) in a loaded landscape; empty if none."""
    return ((landscape.get("tasks") or {}).get(task) or {}).get("curves") or {}


def at_batch(label: str, batch: int) -> str:
    """The label of `label`'s curve measured at `batch`: `label@bN`, or `label` at the curves' 8."""
    return label if batch == CURVE_BATCH else f"{label}@b{batch}"


def split_batch(label: str) -> tuple[str, int]:
    """(recipe label, batch size) of a curve label or a run's name (`label@bN@sS` keeps its `@sS`)."""
    m = re.fullmatch(r"(.*)@b(\d+)(@s\d+)?", label)
    return (m.group(1) + (m.group(3) or ""), int(m.group(2))) if m else (label, CURVE_BATCH)
