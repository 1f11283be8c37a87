"""The simulated bench's page: its table (one row per configuration, development then held-out)
with the paired test of each configuration against the reference, and the means with their 95%
intervals as a chart. Read from the `sim-bench.json` the bench writes; one offline HTML file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from ._html import DRAW_JS, Page, esc, figure_data, json_block, table

__all__ = ["BENCH_PAGE", "bench_html"]

BENCH_PAGE = "sim-bench.html"  # written beside sim-bench.json


def _pct(v: object, fmt: str = ".0%") -> str:
    return "-" if not isinstance(v, int | float) or v != v else format(v, fmt)


def _row(s: Mapping[str, Any]) -> tuple[object, ...]:
    t = s.get("test")
    ci = s["ci"]
    if t:
        vs = (
            f"{t['mean_diff']:+.3f} ({t['ci'][0]:+.3f}..{t['ci'][1]:+.3f}); {_pct(t['relative'], '+.0%')} / "
            f"{_pct(t['lead'], '+.0%')}; {t['pairs']} pairs"
        )
        p = f"{t['p_permutation']:.3g} / {'-' if t['p_wilcoxon'] is None else format(t['p_wilcoxon'], '.3g')}"
    else:
        vs, p = "reference", ""
    return (
        "held-out" if s["held_out"] else "development",
        s["config"],
        s["n"],
        f"{s['mean']:.3f} ({ci[0]:.3f}..{ci[1]:.3f})",
        vs,
        p,
        _pct(s["hacking_rate"], ".1%"),
        _pct(s.get("interception_rate")),
        _pct(s["lock_in"], ".1%"),
        f"{s['late_gain']:+.3f}",
    )


def _means(summaries: list[Mapping[str, Any]]) -> go.Figure:
    fig = go.Figure()
    for held_out, name in ((False, "development"), (True, "held-out")):
        rows = [s for s in summaries if bool(s["held_out"]) == held_out]
        if not rows:
            continue
        fig.add_trace(
            go.Scatter(
                x=[s["config"] for s in rows],
                y=[s["mean"] for s in rows],
                mode="markers",
                name=name,
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [s["ci"][1] - s["mean"] for s in rows],
                    "arrayminus": [s["mean"] - s["ci"][0] for s in rows],
                },
            )
        )
    fig.update_layout(
        title="Normalised score per configuration (mean, 95% interval)",
        yaxis_title="(final - base) / (best reachable - base)",
        margin={"l": 60, "r": 20, "t": 40, "b": 80},
    )
    return fig


def bench_html(report: Mapping[str, Any]) -> str:
    """The page of a simulated bench's `sim-bench.json` (`report`)."""
    summaries = list(report.get("summaries") or [])
    settings = report.get("settings") or {}
    page = Page("RSI-Master simulated bench")
    page.add("<h1>RSI-Master simulated bench</h1>")
    facts = ", ".join(f"{esc(k)} {esc(v)}" for k, v in settings.items() if not isinstance(v, dict | list))
    page.add(
        f"<p>{esc(report.get('campaigns'))} campaigns, wall {esc(report.get('wall_s'))} s. {facts}.</p>"
        "<p class='muted'>Normalised score: (final - base) / (best reachable - base), from the landscape's "
        "ground truth. Each configuration is paired with the reference on the same landscapes and seeds: "
        "mean difference with its bootstrap 95% interval, config / reference - 1 and reference / config - 1, "
        "sign-flip permutation and Wilcoxon p-values.</p>"
    )
    header = (
        "seeds",
        "config",
        "n",
        "normalised (95% CI)",
        "vs reference: diff (CI); rel / lead; pairs",
        "p perm / p Wilcoxon",
        "hacking",
        "intercepted",
        "lock-in",
        "late gain",
    )
    page.add("<section id='table'>" + table(header, (_row(s) for s in summaries)) + "</section>")
    page.add("<div id='means' class='fig'></div>")
    page.data.append(json_block("payload", {"figures": {"means": figure_data(_means(summaries))}}))
    page.scripts.append(DRAW_JS + "drawFigures(JSON.parse(document.getElementById('payload').textContent).figures);")
    return page.render()
