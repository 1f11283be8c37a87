"""Item structure: which items a checkpoint gets right, when outcomes are not independent.

With `item_difficulty` and `item_skill` at 0 (the `default` preset) every checkpoint draws one
independent uniform per item, as before these flags existed. Otherwise an item is right when its
latent `e = sqrt(a) * difficulty + sqrt(b) * skill + sqrt(1 - a - b) * own` lies below the
normal quantile of the checkpoint's accuracy, where `difficulty` is the item's own (shared by
every checkpoint: hard items stay hard), `skill` is the item's loading on the checkpoint's
families (each family a unit vector in a small skill space, the checkpoint a mix of them weighted
by each family's gain: checkpoints of one family miss the same items, two complementary families
miss different ones) and `own` is the checkpoint's own draw. Each term is a standard normal, so
the share of items right is the accuracy in expectation, as before.

The same skill vectors set the interactions: a pair whose skills overlap little gains when mixed
(each covers items the other misses), a redundant pair loses, so the hidden interaction is
predictable from per-item evidence (`interaction_from_overlap`).
"""

from __future__ import annotations

import math

import numpy as np

from ._curves import digest

__all__ = ["SKILL_DIMS", "draw_skills", "interaction_from_overlap", "item_latents", "skill_weights", "structured"]

SKILL_DIMS = 4  # dimension 0 is general ability, shared by every family to a degree
_SQRT2 = math.sqrt(2.0)
_erf = np.frompyfunc(math.erf, 1, 1)


def structured(difficulty: float, skill: float) -> bool:
    return difficulty > 0.0 or skill > 0.0


def draw_skills(rng: np.random.Generator, families: list[str]) -> dict[str, list[float]]:
    """A unit skill vector per family: general ability plus a family-specific direction."""
    out = {}
    for f in families:
        v = rng.standard_normal(SKILL_DIMS)
        v[0] += 1.0  # families share some general ability: overlaps spread over about -0.3..1
        out[f] = [round(float(x), 4) for x in v / np.linalg.norm(v)]
    return out


def interaction_from_overlap(skills: dict[str, list[float]], pair: str, lo: float, hi: float) -> float:
    """The strength of mixing the pair `A+B`: `hi` for orthogonal skills, `lo` for identical ones."""
    a, _, b = pair.partition("+")
    rho = float(np.dot(skills[a], skills[b]))
    return round(lo + (hi - lo) * (1.0 - max(0.0, rho)), 3)


def skill_weights(gains: dict[str, float], skills: dict[str, list[float]], base: float) -> np.ndarray:
    """The checkpoint's direction in skill space: its families' vectors weighted by their gains."""
    w = np.zeros(SKILL_DIMS)
    w[0] = max(base, 1e-3)
    for f, g in gains.items():
        if g > 0 and f in skills:
            w += g * np.asarray(skills[f])
    return w / np.linalg.norm(w)


def item_latents(
    land_id: str,
    ckpt_ident: str,
    split: str,
    size: int,
    weights: np.ndarray,
    difficulty: float,
    skill: float,
    traits: dict[str, tuple[np.ndarray, np.ndarray]],
) -> np.ndarray:
    """Per item a uniform whose comparison with the accuracy decides the outcome (`u < p`)."""
    got = traits.get(split)
    if got is None:
        rng = np.random.default_rng(int.from_bytes(digest("traits", land_id, split)[:8], "big"))
        got = traits[split] = (rng.standard_normal(size), rng.standard_normal((size, SKILL_DIMS)))
    hard, load = got
    own = np.random.default_rng(int.from_bytes(digest("items", ckpt_ident, split)[:8], "big")).standard_normal(size)
    e = math.sqrt(difficulty) * hard + math.sqrt(skill) * (load @ weights) + math.sqrt(1 - difficulty - skill) * own
    return (0.5 * (1.0 + _erf(e / _SQRT2))).astype(float)
