"""The tests the Reviewer's findings rest on and the Main weighs: each returns a `Significance`
(effect, noise, one-sided p, items), so that a reader acts on its fields, never on prose.

A score on `n` items is a binomial draw: its standard error is sqrt(p (1 - p) / n), with p held
inside [MIN_P, 1 - MIN_P] so that a string of zeros on a small split is not read as exact.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from ..events import Significance
from ._curves import MIN_P

__all__ = [
    "ALPHA",
    "DIFFICULTY_STRATA",
    "Stratum",
    "claim_test",
    "complementarity",
    "difficulty_strata",
    "gain_test",
    "normal_sf",
    "paired_gain",
    "standard_error",
    "stratified_complementarity",
]

# A finding is acted on below this p (one-sided): a recommendation the evidence does not carry
# at 5% is noise that a review would otherwise turn into a Worker.
ALPHA = 0.05


def standard_error(p: float, n: int) -> float:
    """The binomial standard error of a score `p` measured on `n` items."""
    q = min(max(p, MIN_P), 1.0 - MIN_P)
    return math.sqrt(q * (1.0 - q) / max(1, n))


def normal_sf(z: float) -> float:
    """P(Z >= z) for a standard normal."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def complementarity(n: int, a: int, b: int, both: int) -> Significance:
    """Do the items only B solves (b - both) exceed what A's and B's scores predict if their
    outcomes were independent? Conditional on the two counts, the overlap `both` is
    hypergeometric (n items, a right for A, b drawn for B); few shared items are many
    complementary ones, so p is its lower tail, P(overlap <= both) (Fisher's exact test, one-sided
    for negative association). The effect is in items: expected overlap minus observed."""
    return stratified_complementarity([Stratum(n, a, b, both)])


@dataclass(frozen=True)
class Stratum:
    """Items of one difficulty: how many, how many A and B each solve, how many both solve."""

    n: int
    a: int
    b: int
    both: int


def stratified_complementarity(strata: list[Stratum]) -> Significance:
    """`complementarity` conditional on item difficulty: within each stratum of items of like
    difficulty (estimated from other checkpoints' outcomes, never from A's or B's) the overlap is
    hypergeometric given A's and B's counts there, and p is the lower tail of the strata's summed
    overlap (the exact convolution of their distributions). Without strata, items every checkpoint
    fails are shared misses that independence does not predict, so two checkpoints overlap more
    than their scores say and real complementarity is read as none."""
    strata = [s for s in strata if s.n > 0]
    if not strata or any(not 0 <= s.both <= min(s.a, s.b) or max(s.a, s.b) > s.n for s in strata):
        return Significance(test="complementarity", effect=0.0, noise=0.0, p=1.0, n=sum(max(0, s.n) for s in strata))
    dist = [1.0]  # P(summed overlap = k), k from the strata's summed lower bounds
    lo_total = expected = var = 0.0
    for s in strata:
        lo, pmf = _overlap_pmf(s.n, s.a, s.b)
        lo_total += lo
        expected += s.a * s.b / s.n
        var += s.a * s.b * (s.n - s.a) * (s.n - s.b) / (s.n * s.n * (s.n - 1)) if s.n > 1 else 0.0
        dist = [
            sum(dist[i] * pmf[k - i] for i in range(len(dist)) if 0 <= k - i < len(pmf))
            for k in range(len(dist) + len(pmf) - 1)
        ]
    both = sum(s.both for s in strata)
    p = sum(dist[: max(0, both - int(lo_total)) + 1])
    return Significance(
        test="complementarity",
        effect=expected - both,
        noise=math.sqrt(max(0.0, var)),
        p=min(1.0, p),
        n=sum(s.n for s in strata),
    )


# Strata of item difficulty for the complementarity test: enough to separate the items most
# checkpoints fail from those most solve, few enough that a 50-item split keeps several per stratum.
DIFFICULTY_STRATA = 4


def difficulty_strata(a: dict[str, bool], b: dict[str, bool], others: list[dict[str, bool]]) -> list[Stratum]:
    """A's and B's outcomes (item -> right) on their shared items, in strata of item difficulty:
    the share of `others` (checkpoints other than A and B, each on the items it was scored on)
    that solve the item, cut at its quantiles into at most `DIFFICULTY_STRATA` strata (fewer with
    fewer other checkpoints; one, the unconditional test, with none)."""
    ids = sorted(set(a) & set(b))
    share: dict[str, float] = {}
    for i in ids:
        seen = [o[i] for o in others if i in o]
        share[i] = sum(seen) / len(seen) if seen else 0.5
    k = min(DIFFICULTY_STRATA, 1 + len(others))
    ranked = sorted(share.values())
    cuts = [ranked[len(ranked) * j // k] for j in range(1, k)] if ranked else []
    groups: dict[int, list[str]] = {}
    for i in ids:
        groups.setdefault(bisect.bisect_right(cuts, share[i]), []).append(i)
    return [
        Stratum(len(g), sum(a[i] for i in g), sum(b[i] for i in g), sum(a[i] and b[i] for i in g))
        for _, g in sorted(groups.items())
    ]


def _overlap_pmf(n: int, a: int, b: int) -> tuple[int, list[float]]:
    """(lowest possible overlap, P(overlap = lowest + i)) for `a` and `b` items right of `n` at random."""
    lo, hi = max(0, a + b - n), min(a, b)
    total = math.lgamma(n + 1) - math.lgamma(b + 1) - math.lgamma(n - b + 1)

    def log_pmf(k: int) -> float:
        return (
            math.lgamma(a + 1)
            - math.lgamma(k + 1)
            - math.lgamma(a - k + 1)
            + math.lgamma(n - a + 1)
            - math.lgamma(b - k + 1)
            - math.lgamma(n - a - b + k + 1)
            - total
        )

    return lo, [math.exp(log_pmf(k)) for k in range(lo, hi + 1)]


def paired_gain(n: int, only_new: int, only_old: int, reference: str) -> Significance:
    """The gain of a checkpoint over `reference` on the same `n` items (McNemar's exact test,
    one-sided): of the items exactly one of them solves, the new one solving at least
    `only_new` of them is binomial(discordant, 1/2) under no gain."""
    m = only_new + only_old
    p = sum(math.comb(m, k) for k in range(only_new, m + 1)) / 2**m if m else 1.0
    return Significance(
        test="gain",
        effect=(only_new - only_old) / max(1, n),
        noise=math.sqrt(m) / max(1, n),
        p=min(1.0, p),
        n=n,
        reference=reference,
    )


def gain_test(score: float, n: int, before: float, n_before: int, reference: str) -> Significance:
    """The gain of a score over an earlier one measured on other items (a one-sided z test on
    the two binomial errors): for a checkpoint trained from the base, whose score no split holds."""
    noise = math.hypot(standard_error(score, n), standard_error(before, n_before))
    effect = score - before
    return Significance(test="gain", effect=effect, noise=noise, p=normal_sf(effect / noise), n=n, reference=reference)


def claim_test(claim: float, n_claim: int, fresh: float, n_fresh: int, reference: str) -> Significance:
    """A claimed score against a fresh measurement of the same checkpoint on other items: the
    effect is how far the claim exceeds it, p the chance of an excess that large from the two
    binomial errors alone (a one-sided z test). A split's own difficulty shifts both ways and is
    not modelled: a claim is flagged only well outside the noise."""
    noise = math.hypot(standard_error(claim, n_claim), standard_error(fresh, n_fresh))
    effect = claim - fresh
    return Significance(
        test="claim", effect=effect, noise=noise, p=normal_sf(effect / noise), n=n_fresh, reference=reference
    )
