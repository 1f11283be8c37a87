"""The curve model shared by the generator and the calibration.

A direction's accuracy after `x` effective steps is a logistic in log steps between the base
accuracy and the direction's plateau: `base + (plateau - base) / (1 + (midpoint / x) ** slope)`.
`midpoint` is where half the gain is reached (onset comes about one `1/slope` decade before);
`slope` sets how sharply it rises. The measured curves of the built-in suite have this shape:
nothing for a while, a steep rise, a plateau (docs/sim.md, the calibration figure).
"""

from __future__ import annotations

import hashlib
import math

__all__ = ["curve", "digest", "normal_from", "uniform_from"]


def curve(x: float, base: float, plateau: float, midpoint: float, slope: float) -> float:
    if x <= 0.0:
        return base
    return base + (plateau - base) / (1.0 + (midpoint / x) ** slope)


def digest(*parts: object) -> bytes:
    return hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=16).digest()


def uniform_from(d: bytes, offset: int = 0) -> float:
    """A uniform in (0, 1) from 7 bytes of a digest."""
    return (int.from_bytes(d[offset : offset + 7], "big") + 0.5) / 2.0**56


def normal_from(d: bytes) -> float:
    """A standard normal from a 16-byte digest (Box-Muller over its two halves)."""
    u1, u2 = uniform_from(d, 0), uniform_from(d, 8)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
