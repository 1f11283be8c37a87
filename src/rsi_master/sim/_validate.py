"""Consistency of a world's parameters: a hand-edited file must not reach the simulator
half-valid (a KeyError mid-campaign)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._items import SKILL_DIMS

if TYPE_CHECKING:
    from ._world import SimWorld

__all__ = ["check_world"]


def check_world(self: SimWorld) -> None:
    """A hand-edited file must not reach the simulator half-valid (a KeyError mid-campaign)."""
    names = [f.name for f in self.family_specs]
    if len(set(names)) != len(names) or not names:
        raise ValueError("family names must be unique and at least one")
    for f in self.family_specs:
        missing = set(f.methods) - set(self.method_specs)
        if missing or "sft" not in f.methods:
            raise ValueError(f"family {f.name!r}: methods {sorted(missing)} without a method spec, or no sft")
        if not self.base < f.plateau <= 1.0 or f.midpoint <= 0 or f.slope <= 0 or f.lr_optimum <= 0:
            raise ValueError(f"family {f.name!r}: plateau, midpoint, slope or lr_optimum out of range")
        for k in f.knobs:
            if k.kind == "choice":
                ok = k.choices and k.optimum in k.choices and k.default in k.choices
            else:
                lo, hi = k.low, k.high
                ok = (
                    lo is not None
                    and hi is not None
                    and lo < hi
                    and (not k.log or lo > 0)
                    and all(isinstance(v, int | float) and lo <= v <= hi for v in (k.default, k.optimum))
                )
            if not ok:
                raise ValueError(f"family {f.name!r}: knob {k.name!r} has an inconsistent range, default or optimum")
    for pair in self.interactions:
        a, _, b = pair.partition("+")
        if a not in names or b not in names or a == b:
            raise ValueError(f"interaction {pair!r} does not name two families")
    for name, table in (("skills", self.skills), ("dev_format", self.dev_format), ("dev_prone", self.dev_prone)):
        if set(table) - set(names):
            raise ValueError(f"{name} names a family the world does not have")
    if any(len(v) != SKILL_DIMS for v in self.skills.values()):
        raise ValueError(f"skills must be vectors of {SKILL_DIMS} numbers")
    splits = {"dev", "review", "final"}
    if set(self.split_sizes) != splits or set(self.split_shift) != splits:
        raise ValueError("split_sizes and split_shift must name exactly dev, review and final")
    if any(n < 1 for n in self.split_sizes.values()):
        raise ValueError("split sizes must be positive")
