"""The overview of several runs: one row per run, and their curves, DAG sizes and decisions side
by side. A run that cannot be read keeps its row, with why, instead of ending the page.

What the page shows of a run is its `RunRow`, made once from the run's view (the live view keeps
each run's until that run's ledger grows, and makes it from its fold without the whole view)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
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
from ._model import CurvePoint, RunView
from ._write import REPORT_FILE

__all__ = ["Entry", "RunRow", "overview_html", "read_runs", "run_dirs"]

_ACTIONS = ("branch", "continue", "verify", "revise", "stop")


@dataclass(frozen=True)
class RunRow:
    """What the overview shows of one run: its row, and what the side-by-side figures draw of it."""

    name: str  # the run's id, or its directory's name
    task: str | None
    model: str | None
    agents: Mapping[str, str]
    budget_s: float | None
    final: object
    review: object
    hacking: float | None
    verified: bool
    problems: int
    workers: int
    reviewers: int
    edges: int
    experiments: int
    actions: Mapping[str, int]  # Main decisions per action
    best: Mapping[str, list[CurvePoint]]  # best-so-far per split

    @classmethod
    def of(
        cls,
        view: RunView,
        *,
        sizes: tuple[int, int, int, int] | None = None,
        actions: Mapping[str, int] | None = None,
        best: Mapping[str, list[CurvePoint]] | None = None,
    ) -> RunRow:
        """The row of `view`; `sizes` (Workers, Reviewers, edges, experiments), `actions` and
        `best`, when given, stand for what a view without its records (the live view's) lacks."""
        if sizes is None:
            workers = sum(n.kind == "worker" for n in view.nodes)
            n_x = sum(len(n.experiments) for n in view.nodes)
            sizes = (workers, len(view.nodes) - workers, len(view.edges), n_x)
        return cls(
            name=view.run_id or Path(view.run_dir).name,
            task=view.task,
            model=view.model,
            agents=dict(view.agents),
            budget_s=view.budget_s,
            final=view.summary.get("final_score"),
            review=view.summary.get("selected_review_score"),
            hacking=view.audit.hacking_rate if view.audit is not None else None,
            verified=view.verify is not None and view.verify.ok and not view.problems,
            problems=len(view.problems),
            workers=sizes[0],
            reviewers=sizes[1],
            edges=sizes[2],
            experiments=sizes[3],
            actions=dict(actions if actions is not None else Counter(d.action for d in view.decisions)),
            best=dict(best if best is not None else view.best),
        )


@dataclass(frozen=True)
class Entry:
    """One run of the overview: its row, or why it could not be read."""

    path: Path
    row: RunRow | None
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
            entries.append(Entry(p, RunRow.of(collect(p, key_dir=key_dir))))
        except RsiMasterError as exc:
            entries.append(Entry(p, None, str(exc)))
    return entries


def _link(entry: Entry, out: Path | None) -> str:
    """The run's name, linked to its report file (next to `out`), or to its live page (no `out`)."""
    name = esc(entry.row.name if entry.row is not None else entry.path.name)
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
    r = entry.row
    if r is None:
        return [_link(entry, out), f"<span class='bad'>unreadable: {esc(entry.error)}</span>", *[""] * 10]
    unit, div = budget_unit(r.budget_s)
    verdict = "<span class='ok'>OK</span>" if r.verified else f"<span class='bad'>FAILED ({r.problems})</span>"
    return [
        _link(entry, out),
        esc(r.task),
        esc(r.model),
        esc(", ".join(f"{k}={a}" for k, a in r.agents.items())),
        esc(f"{r.budget_s / div:.1f} {unit}" if r.budget_s else "n/a"),
        esc(_f(r.final)),
        esc(_f(r.review)),
        esc(_f(r.hacking)),
        verdict,
        r.workers,
        r.reviewers,
        sum(r.actions.values()),
    ]


def _curves(rows: list[RunRow]) -> go.Figure:
    unit, div = budget_unit(max((r.budget_s or 0.0) for r in rows))
    fig = go.Figure()
    palette = plotly.colors.qualitative.Plotly
    for i, r in enumerate(rows):
        for split, dash in (("review", "solid"), ("dev", "dot")):
            pts = r.best.get(split, [])
            fig.add_trace(
                go.Scatter(
                    x=[p.at_s / div for p in pts],
                    y=[p.score for p in pts],
                    mode="lines+markers",
                    line={"shape": "hv", "dash": dash, "color": palette[i % len(palette)]},
                    name=f"{r.name} {split}",
                    legendgroup=r.name,
                )
            )
    fig.update_layout(
        title="Best-so-far score against budget (solid review, dotted dev)", xaxis_title=f"budget ({unit})"
    )
    return fig


def _sizes(rows: list[RunRow]) -> go.Figure:
    names = [r.name for r in rows]
    fig = go.Figure(
        [
            go.Bar(name="workers", x=names, y=[r.workers for r in rows]),
            go.Bar(name="reviewers", x=names, y=[r.reviewers for r in rows]),
            go.Bar(name="edges", x=names, y=[r.edges for r in rows]),
            go.Bar(name="experiments", x=names, y=[r.experiments for r in rows]),
        ]
    )
    fig.update_layout(title="DAG sizes", barmode="group")
    return fig


def _decisions(rows: list[RunRow]) -> go.Figure:
    names = [r.name for r in rows]
    fig = go.Figure([go.Bar(name=a, x=names, y=[r.actions.get(a, 0) for r in rows]) for a in _ACTIONS])
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
    rows = [e.row for e in entries if e.row is not None]
    if len(rows) >= 2:
        page.add("<h2>Side by side</h2><div id='curves'></div>")
        page.add("<div class='row'><div id='sizes'></div><div id='decisions'></div></div>")
        figures = {"curves": _curves(rows), "sizes": _sizes(rows), "decisions": _decisions(rows)}
        page.data.append(json_block("figures", {k: figure_data(f) for k, f in figures.items()}))
        page.scripts.append(DRAW_JS + "drawFigures(JSON.parse(document.getElementById('figures').textContent));")
    return page.render()
