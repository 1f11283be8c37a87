"""The measured landscape (base, reference and recipe-family scores per task).

`landscape.json` is written by `scripts/measure_landscape.py` from real runs; nothing
in it is typed by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LANDSCAPE_PATH = Path(__file__).with_name("landscape.json")


def load_landscape() -> dict[str, Any]:
    """The committed measurements, or an empty record if none were made yet."""
    if not LANDSCAPE_PATH.is_file():
        return {"tasks": {}}
    return dict(json.loads(LANDSCAPE_PATH.read_text()))
