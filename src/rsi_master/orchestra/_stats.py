"""The tests the Reviewer's findings rest on and the Main weighs: each returns a `Significance`
(effect, noise, one-sided p, items), so that a reader acts on its fields, never on prose.

A score on `n` items is a binomial draw: its standard error is sqrt(p (1 - p) / n), with p held
inside [MIN_P, 1 - MIN_P] so that a string of zeros on a small split is not read as exact.
"""

from __future__ import annotations

import math

from ..events import Significance
from ._curves import MIN_P

__all__ = ["ALPHA", "claim_test", "complementarity", "gain_test", "normal_sf", "paired_gain", "standard_error"]

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
    if n <= 0 or not 0 <= both <= min(a, b) or max(a, b) > n:
        return Significance(test="complementarity", effect=0.0, noise=0.0, p=1.0, n=max(0, n))
    expected = a * b / n
    var = a * b * (n - a) * (n - b) / (n * n * (n - 1)) if n > 1 else 0.0
    lo = max(0, a + b - n)
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

    p = sum(math.exp(log_pmf(k)) for k in range(lo, both + 1))
    return Significance(
        test="complementarity", effect=expected - both, noise=math.sqrt(max(0.0, var)), p=min(1.0, p), n=n
    )


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
