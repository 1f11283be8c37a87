"""Validation of generator parameters against a family's knobs.

Parameters come from agents (LLM tool calls, CLI flags), so every value is checked
for name, type and range before any data is generated: a bad request must fail loudly
with a message that names the knob, not silently produce a different dataset.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ._protocol import Knob

__all__ = ["validate_params", "validate_size"]

MAX_EXAMPLES = 1_000_000  # one request larger than this is a mistake, not a dataset


def _check_value(knob: Knob, value: Any) -> Any:
    """Return `value` checked against one knob, or raise ValueError naming it."""
    if knob.kind == "choice":
        # `True in (0, 1)` is true in Python; compare types too so a bool never
        # stands in for an int choice (or the reverse).
        for choice in knob.choices:
            if type(choice) is type(value) and choice == value:
                return value
        raise ValueError(f"knob {knob.name!r}: {value!r} is not one of {list(knob.choices)!r}")
    if knob.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"knob {knob.name!r}: expected an int, got {type(value).__name__} {value!r}")
    elif knob.kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"knob {knob.name!r}: expected a number, got {type(value).__name__} {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"knob {knob.name!r}: {value!r} is not finite")
        value = float(value)
    else:  # pragma: no cover - Knob.kind is a Literal; this guards hand-built knobs
        raise ValueError(f"knob {knob.name!r}: unknown kind {knob.kind!r}")
    if knob.low is not None and value < knob.low:
        raise ValueError(f"knob {knob.name!r}: {value!r} is below the minimum {knob.low!r}")
    if knob.high is not None and value > knob.high:
        raise ValueError(f"knob {knob.name!r}: {value!r} is above the maximum {knob.high!r}")
    return value


def validate_params(family: str, knobs: tuple[Knob, ...], params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the full parameter dict (defaults filled in) or raise ValueError."""
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise ValueError(f"generator {family!r}: params must be a mapping, got {type(params).__name__}")
    by_name = {knob.name: knob for knob in knobs}
    unknown = sorted(str(key) for key in params if key not in by_name)
    if unknown:
        raise ValueError(f"generator {family!r}: unknown knob(s) {unknown}; known knobs: {sorted(by_name)}")
    return {name: _check_value(knob, params.get(name, knob.default)) for name, knob in by_name.items()}


def validate_size(seed: Any, n: Any) -> None:
    """Reject seeds and sizes that are not plain non-negative ints."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"n must be an int, got {type(n).__name__} {n!r}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if n > MAX_EXAMPLES:
        raise ValueError(f"n must be <= {MAX_EXAMPLES}, got {n}")
