"""A direction's knob ranges as an Optuna search space: what every searching Worker (the
orchestra's TPE Worker, the bench's search baselines) suggests from."""

from __future__ import annotations

from typing import Any

from ._directions import Range

__all__ = ["order_bounds", "search_distribution"]


def search_distribution(r: Range) -> Any:
    """The Optuna distribution a knob's range is searched over (a fixed knob is not searched)."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if r.kind == "int":
        return IntDistribution(int(r.low), int(r.high))  # type: ignore[arg-type]
    if r.kind == "float":
        return FloatDistribution(float(r.low), float(r.high), log=r.log)  # type: ignore[arg-type]
    return CategoricalDistribution(list(r.choices))


def order_bounds(knobs: dict[str, Any]) -> None:
    """`min_x` <= `max_x` for every such pair: independent suggestions can cross."""
    for k in list(knobs):
        if k.startswith("min_") and f"max_{k[4:]}" in knobs:
            lo, hi = knobs[k], knobs[f"max_{k[4:]}"]
            if lo > hi:
                knobs[k], knobs[f"max_{k[4:]}"] = hi, lo
