"""A Worker's search as it goes (`Search`), the trial it runs next (`NextTrial`), its search
space over a direction's knobs, and when a trial continues an own checkpoint instead of
searching from the direction's parent (`chain_head`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ._directions import Direction
from ._memory import Trial
from ._search_space import search_distribution

__all__ = ["NextTrial", "Search", "chain_head", "clip", "search_space"]


@dataclass
class Search:
    """A Worker's search as it goes: the study over its space, its trials so far (`memory`, the
    resumed ones first), and what its trials' parameters and chain links were."""

    study: Any
    space: dict[str, Any]
    memory: list[Trial]
    params_of: dict[str, dict[str, Any]]  # experiment -> TPE parameters it trained with (a link's: its head's)
    links: set[str]  # the experiments that continued an own checkpoint (`_chain_head`)
    started: int  # trials started, resumed ones included
    max_rows: int  # the contract's rows per dataset
    max_steps: int  # the contract's steps per experiment
    dev_items: int  # the `dev` split's size (0: unknown)


@dataclass
class NextTrial:
    """The next trial, sized to the time left: a TPE point (`trial`) or a chain link (`head`)."""

    trial: Any  # the study's trial; None for a chain link
    head: str | None  # the own checkpoint a chain link continues
    params: dict[str, Any]
    family: str
    knobs: dict[str, Any]
    train: dict[str, Any]
    n: int  # rows of data
    parent: str
    calibrating: bool  # a short first trial that measures this machine


def search_space(d: Direction) -> dict[str, Any]:
    """Searched parameters: `k:<knob>` for data knobs, `t:<param>` for training."""
    out = {f"k:{k}": search_distribution(r) for k, r in d.knobs.items() if r.kind != "fixed"}
    out.update({f"t:{k}": search_distribution(r) for k, r in d.train.items() if r.kind != "fixed"})
    return out


def clip(dist: Any, value: Any) -> Any:
    from optuna.distributions import CategoricalDistribution

    if isinstance(dist, CategoricalDistribution):
        return value if value in dist.choices else None
    if value is None:
        return None
    v = min(max(value, dist.low), dist.high)
    return round(v) if isinstance(dist.low, int) and not isinstance(dist.low, bool) else float(v)


def chain_head(memory: list[Trial], links: set[str], dev_items: int, search_trials: int) -> str | None:
    """The experiment the next trial continues, or None for a search trial from the parent (fewer
    than `search_trials` trials searched so far, or none completed).

    The head is the latest chain link while its `dev` score is within two binomial standard
    errors of the Worker's best (a deeper checkpoint that scores the same is the better
    start: its score is one noisy draw), else the best one (ties to more training)."""
    done = [
        (m.experiment_id, float(m.dev_score))
        for m in memory
        if m.status == "completed" and m.experiment_id and m.dev_score is not None and math.isfinite(float(m.dev_score))
    ]
    searched = sum(1 for m in memory if m.experiment_id not in links)
    if not done or searched < search_trials:
        return None
    best = max(done, key=lambda m: (m[1], m[0] in links))
    latest = next((m for m in reversed(done) if m[0] in links), None)
    if latest is not None:
        p = min(max(best[1], 0.05), 0.95)
        tol = 2 * math.sqrt(p * (1 - p) / max(1, dev_items))
        if latest[1] >= best[1] - tol:
            return str(latest[0])
    return str(best[0])
