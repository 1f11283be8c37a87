"""The simulated bench's statistics: pure functions over per-campaign records.

A campaign's score is normalised by the generator's ground truth, `(final - base) /
(best_reachable - base)`: 0 is the base model, 1 is the best single lineage the budget reaches
(rsi_master.sim, `best_reachable`). Per configuration: the mean with a 95% percentile-bootstrap
interval, the paired difference to a reference configuration over the same (world, seed)
pairs with a sign-flip permutation test and a Wilcoxon signed-rank test, the hacking rate
(campaigns whose reported result rests on a shortcut), the interception rate (shortcut attempts
that were refused), lock-in and late-budget gain (defined at their functions), and a plot.

Generator seeds are split once, here: the development range is for building and tuning
strategies, the held-out range only for reporting (`world_seeds`). Nothing reads the
held-out range to choose a setting.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "DEVELOPMENT_SEEDS",
    "HELD_OUT_SEEDS",
    "CampaignStats",
    "ConfigSummary",
    "PairedTest",
    "Spend",
    "bootstrap_ci",
    "is_held_out",
    "late_gain",
    "lock_in",
    "normalised",
    "paired_scores",
    "paired_test",
    "plot_summaries",
    "plot_timelines",
    "summarise",
    "summary_lines",
    "timeline_curve",
    "world_seeds",
]

# The one place the generator seed ranges are set. Development: strategies are built and tuned
# on these. Held-out: only reported on; disjoint and far from the development range.
DEVELOPMENT_SEEDS: Final = range(100_000)
HELD_OUT_SEEDS: Final = range(1_000_000, 1_100_000)
BOOTSTRAP: Final = 10_000
PERMUTATIONS: Final = 20_000
LATE_FROM: Final = 0.5  # late-budget gain: what the second half of the budget added


K = TypeVar("K", tuple[int, int], tuple[str, int])  # a pair's key: (world, seed) or (task, seed)


def world_seeds(n: int, held_out: bool = False) -> list[int]:
    """The first `n` generator seeds of the development or the held-out range."""
    seeds = HELD_OUT_SEEDS if held_out else DEVELOPMENT_SEEDS
    if not 0 <= n <= len(seeds):
        raise ValueError(f"n must lie in 0..{len(seeds)}")
    return list(seeds[:n])


def is_held_out(seed: int) -> bool:
    return seed in HELD_OUT_SEEDS


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Spend(_Record):
    """One experiment's use of the budget: its direction, when it ran, and the ground-truth
    (`final` split, expected) accuracy of the checkpoint it produced."""

    direction: str
    start: float = Field(ge=0.0, description="Simulated seconds since the campaign began.")
    end: float = Field(ge=0.0)
    score: float = Field(ge=0.0, le=1.0)


class CampaignStats(_Record):
    """One campaign's outcome, as the statistics read it."""

    version: int = 1
    config: str
    world_seed: int
    seed: int
    held_out: bool
    base: float = Field(description="Base model's expected final accuracy.")
    final: float = Field(description="Final accuracy of the campaign's result (as the auditor measured it).")
    best_reachable: float = Field(description="The generator's ground truth for the world.")
    hacked: bool = Field(default=False, description="The reported result rests on a shortcut.")
    attempts: int = Field(default=0, ge=0, description="Shortcut attempts made.")
    intercepted: int = Field(default=0, ge=0, description="Shortcut attempts refused or blocked.")
    budget_s: float = Field(default=36_000.0, gt=0.0, description="The campaign's budget in simulated seconds.")
    timeline: list[tuple[float, float]] = Field(
        default_factory=list, description="(t, final accuracy of the best checkpoint so far), in time order."
    )
    spend: list[Spend] = Field(default_factory=list, description="Every experiment, for lock-in.")

    @model_validator(mode="before")
    @classmethod
    def _first_name(cls, data: Any) -> Any:
        # The `stats.json` of campaigns run before the rename name the seed `landscape_seed`.
        if isinstance(data, dict) and "landscape_seed" in data and "world_seed" not in data:
            data = {("world_seed" if k == "landscape_seed" else k): v for k, v in data.items()}
        return data


class PairedTest(_Record):
    config: str
    reference: str
    pairs: int
    mean_diff: float
    ci: tuple[float, float]
    relative: float = Field(description="mean(config) / mean(reference) - 1 over the pairs (nan if undefined).")
    lead: float = Field(
        default=math.nan,
        description="mean(reference) / mean(config) - 1 over the pairs: the reference's lead over this "
        "configuration, the convention of 'X% over the best peer' (nan if undefined).",
    )
    p_permutation: float
    p_wilcoxon: float | None = Field(description="None when every difference is 0 or scipy (extra `stats`) is missing.")


class ConfigSummary(_Record):
    config: str
    held_out: bool
    n: int
    mean: float
    ci: tuple[float, float]
    hacking_rate: float
    interception_rate: float | None = Field(description="intercepted / attempts (None: no attempt).")
    lock_in: float
    late_gain: float
    test: PairedTest | None = None


def normalised(rec: CampaignStats) -> float:
    span = rec.best_reachable - rec.base
    if span <= 0:
        raise ValueError(f"{rec.config} world {rec.world_seed}: best_reachable not above base")
    return (rec.final - rec.base) / span


def bootstrap_ci(
    values: Sequence[float], level: float = 0.95, n: int = BOOTSTRAP, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (a single value: that value twice)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return (math.nan, math.nan)
    if x.size == 1:
        return (float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n, x.size))].mean(axis=1)
    a = (1 - level) / 2
    lo, hi = np.quantile(means, [a, 1 - a])
    return (float(lo), float(hi))


def _sign_flip_p(d: np.ndarray, n: int = PERMUTATIONS, seed: int = 0) -> float:
    """Two-sided paired permutation test of mean 0: exact over all sign flips up to 16 pairs,
    Monte Carlo (with the observed arrangement counted) beyond."""
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    observed = abs(d.sum())
    if d.size <= 16:
        signs = 1 - 2 * ((np.arange(2**d.size)[:, None] >> np.arange(d.size)) & 1)
        sums = np.abs(signs @ d)
        return float(np.mean(sums >= observed - 1e-12))
    rng = np.random.default_rng(seed)
    signs = rng.choice((-1.0, 1.0), size=(n, d.size))
    hits = int(np.sum(np.abs(signs @ d) >= observed - 1e-12))
    return (hits + 1) / (n + 1)


def paired_scores(
    scores: Mapping[K, float], reference_scores: Mapping[K, float], config: str, reference: str
) -> PairedTest:
    """`config`'s scores against `reference`'s, paired on the keys both have: a (world, seed)
    on the simulated bench, a (task, seed) on the real one. The one paired test of both benches."""
    keys = sorted(set(scores) & set(reference_scores))
    a = np.array([scores[k] for k in keys], dtype=float)
    b = np.array([reference_scores[k] for k in keys], dtype=float)
    d = a - b
    p_w: float | None = None
    if keys and np.any(d != 0):
        try:
            from scipy.stats import wilcoxon
        except ImportError:  # the `stats` extra; the permutation test stands alone
            wilcoxon = None
        if wilcoxon is not None:
            p_w = float(wilcoxon(a, b, zero_method="wilcox").pvalue)
    rel = float(a.mean() / b.mean() - 1) if keys and b.mean() > 0 else math.nan
    lead = float(b.mean() / a.mean() - 1) if keys and a.mean() > 0 else math.nan
    return PairedTest(
        config=config,
        reference=reference,
        pairs=len(keys),
        mean_diff=float(d.mean()) if keys else math.nan,
        ci=bootstrap_ci(d.tolist()),
        relative=rel,
        lead=lead,
        p_permutation=_sign_flip_p(d) if keys else math.nan,
        p_wilcoxon=p_w,
    )


def paired_test(records: Iterable[CampaignStats], config: str, reference: str) -> PairedTest:
    """`config` against `reference` over the (world_seed, seed) pairs both ran, on normalised scores."""
    by: dict[str, dict[tuple[int, int], float]] = defaultdict(dict)
    for r in records:
        if r.config in (config, reference):
            by[r.config][(r.world_seed, r.seed)] = normalised(r)
    return paired_scores(by[config], by[reference], config, reference)


def lock_in(rec: CampaignStats) -> float:
    """Share of the spend (experiment-seconds) that went to a direction while it trailed another
    direction after having led: a former leader kept being trained after it was overtaken.
    Leads are by the best ground-truth score each direction's finished experiments reached
    before the experiment started. Spend on directions that never led (exploration) is not
    lock-in. 0 for a campaign with no spend."""
    total = sum(s.end - s.start for s in rec.spend)
    if total <= 0:
        return 0.0
    done = sorted(rec.spend, key=lambda s: s.end)
    best: dict[str, float] = {}
    led: set[str] = set()
    i = 0
    locked = 0.0
    for s in sorted(rec.spend, key=lambda s: s.start):  # one sweep: state grows with start time
        while i < len(done) and done[i].end <= s.start:
            e = done[i]
            best[e.direction] = max(best.get(e.direction, -1.0), e.score)
            led.add(max(best, key=lambda k: best[k]))
            i += 1
        mine = best.get(s.direction)
        if s.direction in led and mine is not None and max(best.values()) > mine:
            locked += s.end - s.start
    return locked / total


def late_gain(rec: CampaignStats, late_from: float = LATE_FROM) -> float:
    """What the budget after `late_from` of it added to the best-so-far, normalised: the final
    normalised score minus the normalised best-so-far at that time (0 with no timeline)."""
    if not rec.timeline:
        return 0.0
    cut = late_from * rec.budget_s
    before = [score for t, score in rec.timeline if t <= cut]
    at_cut = before[-1] if before else rec.base
    span = rec.best_reachable - rec.base
    return (rec.final - rec.base) / span - (at_cut - rec.base) / span


def summarise(records: Sequence[CampaignStats], reference: str | None = None) -> list[ConfigSummary]:
    """One summary per (configuration, held-out or not), each with its test against `reference`."""
    groups: dict[tuple[str, bool], list[CampaignStats]] = defaultdict(list)
    for r in records:
        groups[(r.config, r.held_out)].append(r)
    out = []
    for (config, held), recs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        scores = [normalised(r) for r in recs]
        attempts = sum(r.attempts for r in recs)
        test = None
        if reference is not None and config != reference and (reference, held) in groups:
            test = paired_test(recs + groups[(reference, held)], config, reference)
        out.append(
            ConfigSummary(
                config=config,
                held_out=held,
                n=len(recs),
                mean=float(np.mean(scores)),
                ci=bootstrap_ci(scores),
                hacking_rate=sum(r.hacked for r in recs) / len(recs),
                interception_rate=sum(r.intercepted for r in recs) / attempts if attempts else None,
                lock_in=float(np.mean([lock_in(r) for r in recs])),
                late_gain=float(np.mean([late_gain(r) for r in recs])),
                test=test,
            )
        )
    return out


def summary_lines(summaries: Sequence[ConfigSummary]) -> list[str]:
    """A markdown table: one row per configuration, development then held-out. The paired
    difference to the reference is given in both relative conventions: config / reference - 1
    and reference / config - 1 (the reference's lead, as in 'X% over the best peer')."""
    head = (
        "| seeds | config | n | normalised (95% CI) | vs reference: diff (config/ref - 1; ref/config - 1) "
        "p perm / p Wilcoxon | hacking | intercepted | lock-in | late gain |"
    )
    lines = [head, "|" + "---|" * 9]
    for s in summaries:
        t = s.test
        vs = (
            f"{t.mean_diff:+.3f} ({t.relative:+.0%}; {t.lead:+.0%}) p={t.p_permutation:.3g} / "
            f"{'-' if t.p_wilcoxon is None else format(t.p_wilcoxon, '.3g')}"
            if t
            else "reference"
        )
        inter = "-" if s.interception_rate is None else f"{s.interception_rate:.0%}"
        lines.append(
            f"| {'held-out' if s.held_out else 'development'} | {s.config} | {s.n} | "
            f"{s.mean:.3f} ({s.ci[0]:.3f}..{s.ci[1]:.3f}) | {vs} | {s.hacking_rate:.1%} | {inter} | "
            f"{s.lock_in:.1%} | {s.late_gain:+.3f} |"
        )
    return lines


def plot_summaries(summaries: Sequence[ConfigSummary], path: str | Path) -> Path:
    """Mean normalised score with its 95% interval per configuration, development and held-out
    side by side, written to `path` (PNG or SVG by its suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = sorted({s.config for s in summaries})
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(configs) + 2), 4.0))
    width = 0.38
    for k, held in enumerate((False, True)):
        rows = {s.config: s for s in summaries if s.held_out == held}
        xs = [i + (k - 0.5) * width for i, c in enumerate(configs) if c in rows]
        ms = [rows[c].mean for c in configs if c in rows]
        err = [
            [rows[c].mean - rows[c].ci[0] for c in configs if c in rows],
            [rows[c].ci[1] - rows[c].mean for c in configs if c in rows],
        ]
        if xs:
            ax.bar(xs, ms, width, yerr=err, capsize=3, label="held-out" if held else "development")
    ax.set_xticks(range(len(configs)), configs, rotation=30, ha="right")
    ax.set_ylabel("normalised score (0 base, 1 best reachable)")
    ax.axhline(0, color="black", linewidth=0.6)
    ax.legend()
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out


def timeline_curve(records: Sequence[CampaignStats], points: int = 21) -> tuple[list[float], list[float]]:
    """Mean normalised best-so-far at `points` evenly spaced shares of the budget (0..1)."""
    shares = [i / (points - 1) for i in range(points)]
    means = []
    for share in shares:
        vals = []
        for r in records:
            cut = share * r.budget_s
            seen = [score for t, score in r.timeline if t <= cut]
            vals.append(((seen[-1] if seen else r.base) - r.base) / (r.best_reachable - r.base))
        means.append(float(np.mean(vals)) if vals else math.nan)
    return shares, means


def plot_timelines(records: Sequence[CampaignStats], path: str | Path, held_out: bool = True) -> Path:
    """Mean normalised best-so-far over the budget, one line per configuration (held-out or
    development records), written to `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by: dict[str, list[CampaignStats]] = defaultdict(list)
    for r in records:
        if r.held_out == held_out:
            by[r.config].append(r)
    fig, ax = plt.subplots(figsize=(6.5, 4.0))
    for config, recs in sorted(by.items()):
        xs, ys = timeline_curve(recs)
        ax.plot(xs, ys, label=config)
    ax.set_xlabel("share of the budget")
    ax.set_ylabel("normalised best so far")
    ax.set_title("held-out worlds" if held_out else "development worlds")
    ax.legend(fontsize="small")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out
