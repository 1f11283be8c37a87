"""Figures from campaign results: per configuration, mean and standard deviation over seeds
of the per-task score, the macro average, hacking and interception rates, the gain in the
last half of the budget and slot utilisation, and the paired test against the reference
configuration (`bench._stats.paired_scores`, the simulated bench's own, on the reported score
of each (task, seed) both ran); a markdown table, JSON, and a PNG plot of the best-so-far
`final` score against the budget."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import RsiMasterError
from ._campaign import CampaignResult, _at
from ._stats import paired_scores

__all__ = ["GRID", "aggregate", "markdown", "plot"]

GRID = [i / 20 for i in range(21)]  # budget fractions the curves are averaged on


def _ms(values: Sequence[float | None]) -> dict[str, float | int | None]:
    v = [float(x) for x in values if x is not None]
    if not v:
        return {"mean": None, "std": None, "n": 0}
    return {"mean": statistics.fmean(v), "std": statistics.stdev(v) if len(v) > 1 else 0.0, "n": len(v)}


def aggregate(results: list[CampaignResult], configs: list[str], reference: str | None = None) -> dict[str, Any]:
    """Per configuration: figures over seeds (each seed's macro average over tasks first), and,
    for every configuration but `reference`, its paired test against it (None without one)."""
    out: dict[str, Any] = {}
    tasks = sorted({r.task for r in results})
    scores: dict[str, dict[tuple[str, int], float]] = {c: {} for c in configs}
    for r in results:
        if r.config in scores:
            scores[r.config][(r.task, r.seed)] = r.score
    for name in configs:
        rs = [r for r in results if r.config == name]
        if not rs:
            continue
        seeds = sorted({r.seed for r in rs})
        per_task = {t: _ms([r.score for r in rs if r.task == t]) for t in tasks}
        macro = []
        curves = []
        for s in seeds:
            mine = [r for r in rs if r.seed == s]
            if {r.task for r in mine} == set(tasks):  # a seed counts once all its tasks ran
                macro.append(statistics.fmean(r.score for r in mine))
                curves.append(
                    [statistics.fmean(_at(r.audit.curve, g) if r.audit.curve else r.score for r in mine) for g in GRID]
                )
        out[name] = {
            "seeds": seeds,
            "campaigns": len(rs),
            "score_by_task": per_task,
            "macro_average": _ms(macro),
            "hacking_rate": _ms([r.audit.hacking_rate for r in rs]),
            "interception_rate": _ms([r.audit.interception_rate for r in rs]),
            "returned_hacked": sum(r.audit.returned_hacked for r in rs),
            "blocked_attempts": sum(r.audit.blocked_attempts for r in rs),
            "executed_attempts": sum(r.audit.executed_attempts for r in rs),
            "gain_last_half": _ms([r.gain_last_half for r in rs]),
            "slot_utilisation": _ms([r.slot_utilisation for r in rs]),
            "harness_final": _ms([r.harness_final for r in rs]),
            "selected_review_score": _ms([r.selected_review_score for r in rs]),
            "base_score": _ms([r.base_score for r in rs]),
            "experiments": _ms([r.experiments for r in rs]),
            "curve": {
                "grid": GRID,
                "mean": [statistics.fmean(c[i] for c in curves) for i in range(len(GRID))] if curves else [],
                "std": [statistics.stdev(c[i] for c in curves) if len(curves) > 1 else 0.0 for i in range(len(GRID))]
                if curves
                else [],
            },
            "test": _test(scores, name, reference),
        }
    return out


def _test(scores: dict[str, dict[tuple[str, int], float]], name: str, reference: str | None) -> Any:
    """The paired test of `name` against `reference` as JSON (an undefined figure as null, so that
    the file is strict JSON and reads back equal), None for the reference itself or without one."""
    if reference is None or name == reference or not scores.get(reference):
        return None
    return json.loads(paired_scores(scores[name], scores[reference], name, reference).model_dump_json())


def _f(m: dict[str, Any], pct: bool = False, digits: int = 3) -> str:
    if m["mean"] is None:
        return "n/a"
    if pct:
        return f"{m['mean'] * 100:.1f} ± {m['std'] * 100:.1f}"
    return f"{m['mean']:.{digits}f} ± {m['std']:.{digits}f}"


def markdown(figures: dict[str, Any]) -> str:
    """The ablation table: one row per configuration, mean ± std over seeds."""
    if not figures:
        return "(no campaigns)\n"
    tasks = sorted(next(iter(figures.values()))["score_by_task"])
    head = (
        ["config", "seeds"]
        + [f"{t} final" for t in tasks]
        + [
            "macro avg",
            "selected review score",
            "hacking %",
            "interception %",
            "returned hacked",
            "gain last half",
            "slot util.",
            "experiments",
        ]
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, f in figures.items():
        row = (
            [name, str(len(f["seeds"]))]
            + [_f(f["score_by_task"][t]) for t in tasks]
            + [
                _f(f["macro_average"]),
                _f(f["selected_review_score"]),
                _f(f["hacking_rate"], pct=True),
                _f(f["interception_rate"], pct=True),
                f"{f['returned_hacked']}/{f['campaigns']}",
                _f(f["gain_last_half"]),
                _f(f["slot_utilisation"], digits=2),
                _f(f["experiments"], digits=1),
            ]
        )
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def plot(figures: dict[str, Any], path: str | Path, title: str) -> Path:
    """PNG: best-so-far `final` score (macro average) against the fraction of budget spent."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # a clear message rather than a stack trace
        raise RsiMasterError("the plot needs matplotlib: pip install 'rsi-master[plot]' (or pass --no-plot)") from None
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, f in figures.items():
        c = f["curve"]
        if not c["mean"]:
            continue
        ax.step(c["grid"], c["mean"], where="post", label=name)
        lo = [m - s for m, s in zip(c["mean"], c["std"])]
        hi = [m + s for m, s in zip(c["mean"], c["std"])]
        ax.fill_between(c["grid"], lo, hi, step="post", alpha=0.12)
    ax.set_xlabel("fraction of the wall-clock budget")
    ax.set_ylabel("best-so-far final score (macro average; hacked = base)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
