"""A run's charts as Plotly figures: best-so-far scores and each lineage's curve against the
budget, slot occupancy (a Gantt of jobs), the tool-call mix per fifth of the budget, the audit."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from ..expos import SUBCATEGORIES, Observation
from ..orchestra import KINDS
from ._model import CurvePoint, RunView

__all__ = ["audit_figure", "best_figure", "budget_unit", "gantt_figure", "lineage_figure", "tool_mix_figure"]

_MARGIN = {"l": 50, "r": 20, "t": 40, "b": 40}


def budget_unit(budget_s: float | None) -> tuple[str, float]:
    """The unit the budget axis is read in, and its length in seconds."""
    b = budget_s or 0.0
    return ("h", 3600.0) if b >= 3 * 3600 else ("min", 60.0) if b >= 600 else ("s", 1.0)


def _budget_line(fig: go.Figure, view: RunView, div: float) -> None:
    # The shape and its label as layout records: `add_vline` draws the same but costs ~60 ms a call.
    if view.budget_s:
        x = view.budget_s / div
        fig.add_shape(
            type="line", x0=x, x1=x, y0=0, y1=1, xref="x", yref="paper", line={"dash": "dash", "color": "#999"}
        )
        fig.add_annotation(x=x, y=1, xref="x", yref="paper", text="budget", showarrow=False, yanchor="bottom")


def best_figure(view: RunView) -> go.Figure:
    unit, div = budget_unit(view.budget_s)
    fig = go.Figure()
    for split, color in (("dev", "#1f77b4"), ("review", "#ff7f0e")):
        pts = view.best.get(split, [])
        fig.add_trace(
            go.Scatter(
                x=[p.at_s / div for p in pts],
                y=[p.score for p in pts],
                mode="lines+markers",
                line={"shape": "hv", "color": color},
                name=f"best {split}",
                text=[p.experiment for p in pts],
                hovertemplate="%{text}: %{y:.3f} at %{x:.2f} " + unit + "<extra></extra>",
            )
        )
    _budget_line(fig, view, div)
    fig.update_layout(title="Best-so-far score against budget", xaxis_title=f"budget spent ({unit})", margin=_MARGIN)
    return fig


# Lineages drawn as traces of their own; the rest share one grey trace (every point kept, each
# with its experiment on hover). A browser draws thousands of traces slowly: a 100k-event campaign
# has about 7,000 lineages, and one trace each makes its report take about 46 s to render. Past
# `LINEAGE_DENSITY` lineages the rest are a density instead (experiments per cell of budget and
# score), and the title says how many lineages it holds: each experiment's score is in its node's panel.
LINEAGE_TRACES = 30
LINEAGE_DENSITY = 2000
DENSITY_BINS = (80, 40)  # budget, score
LABELLED_JOBS = 500


def lineage_figure(view: RunView) -> go.Figure:
    unit, div = budget_unit(view.budget_s)
    fig = go.Figure()
    ranked = sorted(view.lineages, key=lambda r: -max((p.score for p in view.lineages[r]), default=0.0))
    best = set(ranked[:LINEAGE_TRACES])  # drawn in the run's order, as when every lineage fits
    shown = [(r, pts) for r, pts in view.lineages.items() if r in best]
    rest = [(r, pts) for r, pts in view.lineages.items() if r not in best]
    dense = len(view.lineages) > LINEAGE_DENSITY
    if dense:  # first, so that the lineages in colour are drawn over it
        fig.add_trace(_density([p for _r, pts in rest for p in pts], div, unit, len(rest)))
    for root, pts in shown:
        fig.add_trace(
            go.Scatter(
                x=[p.at_s / div for p in pts],
                y=[p.score for p in pts],
                mode="lines+markers",
                name=root,
                text=[p.experiment for p in pts],
                hovertemplate="%{text}: dev %{y:.3f}<extra>" + root + "</extra>",
            )
        )
    if rest and not dense:
        xs: list[float | None] = []
        ys: list[float | None] = []
        texts: list[str] = []
        for root, pts in rest:  # one line per lineage, broken between lineages
            xs += [p.at_s / div for p in pts] + [None]
            ys += [p.score for p in pts] + [None]
            texts += [f"{p.experiment} ({root})" for p in pts] + [""]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers",
                name=f"{len(rest)} other lineages",
                line={"color": "#bbb", "width": 1},
                marker={"color": "#bbb", "size": 4},
                text=texts,
                hovertemplate="%{text}: dev %{y:.3f}<extra></extra>",
            )
        )
    _budget_line(fig, view, div)
    title = "Each lineage's dev score (lineage: experiments continuing from one trained from the base)"
    if dense:
        title += f"<br><sub>the {len(shown)} best lineages in colour; {len(rest)} lineages shown as density</sub>"
    elif rest:
        title += f"<br><sub>the {len(shown)} best lineages in colour, the other {len(rest)} in grey</sub>"
    fig.update_layout(title=title, xaxis_title=f"budget spent ({unit})", margin=_MARGIN)
    return fig


def _density(points: list[CurvePoint], div: float, unit: str, lineages: int) -> go.Heatmap:
    """`points` counted per cell of budget and score (an empty cell left blank)."""
    x = np.array([p.at_s / div for p in points], dtype=float)
    y = np.array([p.score for p in points], dtype=float)
    counts, xe, ye = np.histogram2d(x, y, bins=DENSITY_BINS)
    z = [[int(c) if c else None for c in row] for row in counts.T]  # rows: score bins
    return go.Heatmap(
        x=((xe[:-1] + xe[1:]) / 2).tolist(),
        y=((ye[:-1] + ye[1:]) / 2).tolist(),
        z=z,
        colorscale=[[0.0, "#e4e4e4"], [1.0, "#4d4d4d"]],
        showscale=False,
        name=f"{lineages} lineages (density)",
        showlegend=True,
        hoverongaps=False,
        hovertemplate="%{z} experiments: dev ≈ %{y:.3f} at ≈ %{x:.2f} " + unit + "<extra></extra>",
    )


def gantt_figure(view: RunView) -> go.Figure:
    unit, div = budget_unit(view.budget_s)
    fig = go.Figure()
    for kind, color in (("worker", "#1f77b4"), ("reviewer", "#d62728")):
        jobs = [j for j in view.jobs if j.kind == kind]
        fig.add_trace(
            go.Bar(
                orientation="h",
                base=[j.start_s / div for j in jobs],
                x=[max(j.end_s - j.start_s, 0.0) / div for j in jobs],
                y=[f"slot {j.slot}" for j in jobs],
                name=kind,
                marker_color=color,
                text=[html.escape(j.node) for j in jobs],
                customdata=[[j.end_s / div, j.status or "running"] for j in jobs],
                # a label per bar is measured and fitted by the browser: past `LABELLED_JOBS` bars
                # the node is in the hover only
                textposition="inside" if len(view.jobs) <= LABELLED_JOBS else "none",
                hovertemplate="%{text}: %{base:.2f} to %{customdata[0]:.2f} "
                + unit
                + " (%{customdata[1]})<extra>"
                + kind
                + "</extra>",
            )
        )
    _budget_line(fig, view, div)
    fig.update_layout(
        title="Slot occupancy",
        barmode="overlay",
        xaxis_title=f"budget ({unit})",
        margin=_MARGIN,
        yaxis={"autorange": "reversed"},
    )
    return fig


def tool_mix_figure(view: RunView) -> go.Figure:
    fifths = [f"{20 * i} to {20 * (i + 1)} %" for i in range(len(view.tool_calls_by_fifth))]
    fig = go.Figure([go.Bar(x=fifths, y=[f.get(k, 0) for f in view.tool_calls_by_fifth], name=k) for k in KINDS])
    fig.update_layout(
        title="Tool calls by kind per fifth of the budget", barmode="stack", xaxis_title="budget", margin=_MARGIN
    )
    return fig


def audit_figure(view: RunView) -> go.Figure:
    observations = [o.value for o in Observation]
    subs = [s.value for s in SUBCATEGORIES]
    counts = view.audit.observations if view.audit is not None else {}
    z = [[counts.get(s, {}).get(o, 0) for o in observations] for s in subs]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=observations,
            y=subs,
            text=z,
            texttemplate="%{text}",
            colorscale="Blues",
            showscale=False,
            hovertemplate="%{y} / %{x}: %{z} submissions<extra></extra>",
        )
    )
    fig.update_layout(
        title="Audit: submissions by subcategory and observation", margin={**_MARGIN, "l": 170}, height=420
    )
    return fig
