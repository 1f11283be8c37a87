"""The overview of several runs: one row per run, and their curves, DAG sizes and decisions side
by side. A run that cannot be read keeps its row, with why, instead of ending the page."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import plotly.colors
import plotly.graph_objects as go

from ..errors import NotARunError, RsiMasterError
from ..rundir import LEDGER_FILE, is_run_dir
from ._collect import collect
from ._figures import budget_unit
from ._html import DRAW_JS, Page, esc, figure_data, json_block, table
from ._model import RunView
from ._write import REPORT_FILE

__all__ = ["Entry", "overview_html", "read_runs", "run_dirs"]

_ACTIONS = ("branch", "continue", "verify", "revise", "stop")


@dataclass(frozen=True)
class Entry:
    """One run of the overview: its view, or why it could not be read."""

    path: Path
    view: RunView | None
    error: str | None = None


def run_dirs(paths: list[str]) -> list[Path]:
    """The run directories `paths` name: each a run directory, or a directory of runs (its
    subdirectories holding a ledger). A path that is neither is a NotARunError."""
    out: list[Path] = []
    for given in paths:
        p = Path(given)
        if not p.is_dir():
            raise NotARunError(f"{p}: no such run directory" if not p.exists() else f"{p}: not a directory")
        if is_run_dir(p):
            out.append(p)
            continue
        runs = sorted(c for c in p.iterdir() if c.is_dir() and is_run_dir(c))
        if not runs:
            raise NotARunError(
                f"{p}: neither a run directory nor a directory of runs (no {LEDGER_FILE} in it or below)"
            )
        out.extend(runs)
    return out


def read_runs(paths: list[Path], key_dir: str | None = None) -> list[Entry]:
    entries = []
    for p in paths:
        try:
            entries.append(Entry(p, collect(p, key_dir=key_dir)))
        except RsiMasterError as exc:
            entries.append(Entry(p, None, str(exc)))
    return entries


def _link(entry: Entry, out: Path | None) -> str:
    """The run's name, linked to its report file (next to `out`), or to its live page (no `out`)."""
    name = esc(entry.view.run_id if entry.view is not None and entry.view.run_id else entry.path.name)
    if out is None:
        return f"<a href='run/{esc(quote(entry.path.name))}/'>{name}</a>"
    report = entry.path / REPORT_FILE
    if not report.is_file():
        return name
    href = os.path.relpath(report.resolve(), out.parent.resolve())
    return f"<a href='{esc(href)}'>{name}</a>"


def _f(v: object) -> object:
    return f"{v:.3f}" if isinstance(v, float) else ("n/a" if v is None else v)


def _row(entry: Entry, out: Path | None) -> list[object]:
    v = entry.view
    if v is None:
        return [_link(entry, out), f"<span class='bad'>unreadable: {esc(entry.error)}</span>", *[""] * 10]
    s = v.summary
    unit, div = budget_unit(v.budget_s)
    ok = v.verify is not None and v.verify.ok and not v.problems
    verdict = "<span class='ok'>OK</span>" if ok else f"<span class='bad'>FAILED ({len(v.problems)})</span>"
    return [
        _link(entry, out),
        esc(v.task),
        esc(v.model),
        esc(", ".join(f"{k}={a}" for k, a in v.agents.items())),
        esc(f"{v.budget_s / div:.1f} {unit}" if v.budget_s else "n/a"),
        esc(_f(s.get("final_score"))),
        esc(_f(s.get("selected_review_score"))),
        esc(_f(v.audit.hacking_rate if v.audit is not None else None)),
        verdict,
        sum(n.kind == "worker" for n in v.nodes),
        sum(n.kind == "reviewer" for n in v.nodes),
        len(v.decisions),
    ]


def _curves(views: list[RunView]) -> go.Figure:
    unit, div = budget_unit(max((v.budget_s or 0.0) for v in views))
    fig = go.Figure()
    palette = plotly.colors.qualitative.Plotly
    for i, v in enumerate(views):
        for split, dash in (("review", "solid"), ("dev", "dot")):
            pts = v.best.get(split, [])
            fig.add_trace(
                go.Scatter(
                    x=[p.at_s / div for p in pts],
                    y=[p.score for p in pts],
                    mode="lines+markers",
                    line={"shape": "hv", "dash": dash, "color": palette[i % len(palette)]},
                    name=f"{v.run_id} {split}",
                    legendgroup=v.run_id,
                )
            )
    fig.update_layout(
        title="Best-so-far score against budget (solid review, dotted dev)", xaxis_title=f"budget ({unit})"
    )
    return fig


def _sizes(views: list[RunView]) -> go.Figure:
    names = [v.run_id or v.run_dir for v in views]
    fig = go.Figure(
        [
            go.Bar(name="workers", x=names, y=[sum(n.kind == "worker" for n in v.nodes) for v in views]),
            go.Bar(name="reviewers", x=names, y=[sum(n.kind == "reviewer" for n in v.nodes) for v in views]),
            go.Bar(name="edges", x=names, y=[len(v.edges) for v in views]),
            go.Bar(name="experiments", x=names, y=[sum(len(n.experiments) for n in v.nodes) for v in views]),
        ]
    )
    fig.update_layout(title="DAG sizes", barmode="group")
    return fig


def _decisions(views: list[RunView]) -> go.Figure:
    names = [v.run_id or v.run_dir for v in views]
    fig = go.Figure(
        [go.Bar(name=a, x=names, y=[sum(d.action == a for d in v.decisions) for v in views]) for a in _ACTIONS]
    )
    fig.update_layout(title="Main decisions per kind", barmode="group")
    return fig


def overview_html(entries: list[Entry], out: Path | None) -> str:
    """The overview page written to `out`; without `out`, the live view's (runs link to their live
    pages and the list reloads itself)."""
    page = Page(f"RSI-Master overview: {len(entries)} runs")
    if out is None:
        page.add("<meta http-equiv='refresh' content='5'>")
    page.add(f"<h1>RSI-Master: {len(entries)} runs</h1>")
    header = (
        "run",
        "task",
        "model",
        "agents",
        "budget",
        "final",
        "review",
        "hacking",
        "verify",
        "workers",
        "reviewers",
        "decisions",
    )
    page.add(
        "<section id='runs'>" + table(header, (_row(e, out) for e in entries), raw=frozenset(range(9))) + "</section>"
    )
    views = [e.view for e in entries if e.view is not None]
    if len(views) >= 2:
        page.add("<h2>Side by side</h2><div id='curves'></div>")
        page.add("<div class='row'><div id='sizes'></div><div id='decisions'></div></div>")
        figures = {"curves": _curves(views), "sizes": _sizes(views), "decisions": _decisions(views)}
        page.data.append(json_block("figures", {k: figure_data(f) for k, f in figures.items()}))
        page.scripts.append(DRAW_JS + "drawFigures(JSON.parse(document.getElementById('figures').textContent));")
    return page.render()
