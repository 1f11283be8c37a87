"""The bench's page: its table with the paired test of each configuration against the reference,
and the means as a chart; one offline HTML file. The simulated bench's (`sim-bench.json`): one row
per configuration, development then held-out, normalised scores with 95% intervals. The real
bench's (`bench.json`): one row per configuration, each task's `final` score and the macro
average over tasks as mean ± std over seeds, and the best-so-far curves against the budget."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from ._html import DRAW_JS, Page, esc, figure_data, json_block, table
from ._write import write_page

__all__ = ["BENCH_PAGE", "REAL_BENCH_PAGE", "bench_html", "bench_page"]

BENCH_PAGE = "sim-bench.html"  # written beside sim-bench.json
REAL_BENCH_PAGE = "bench.html"  # written beside bench.json


def _pct(v: object, fmt: str = ".0%") -> str:
    return "-" if not isinstance(v, int | float) or v != v else format(v, fmt)


def _vs(t: Mapping[str, Any] | None) -> tuple[str, str]:
    """A paired test's two cells: the difference with its interval, both relative readings and the
    pairs; the two p-values ("reference" for the configuration the others are paired with)."""
    if not t:
        return "reference", ""
    ci = t["ci"]
    vs = (
        f"{_pct(t['mean_diff'], '+.3f')} ({_pct(ci[0], '+.3f')}..{_pct(ci[1], '+.3f')}); "
        f"{_pct(t['relative'], '+.0%')} / {_pct(t['lead'], '+.0%')}; {t['pairs']} pairs"
    )
    return vs, f"{_pct(t['p_permutation'], '.3g')} / {_pct(t['p_wilcoxon'], '.3g')}"


def _row(s: Mapping[str, Any]) -> tuple[object, ...]:
    vs, p = _vs(s.get("test"))
    ci = s["ci"]
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
    """The page of a bench's report: the simulated bench's `sim-bench.json` or the real one's `bench.json`."""
    if "summaries" not in report:
        return _real_html(report)
    summaries = list(report.get("summaries") or [])
    settings = report.get("settings") or {}
    page = Page("RSI-Master simulated bench")
    page.add("<h1>RSI-Master simulated bench</h1>")
    facts = ", ".join(f"{esc(k)} {esc(v)}" for k, v in settings.items() if not isinstance(v, dict | list))
    page.add(
        f"<p>{esc(report.get('campaigns'))} campaigns, wall {esc(report.get('wall_s'))} s. {facts}.</p>"
        "<p class='muted'>Normalised score: (final - base) / (best reachable - base), from the world's "
        "ground truth. Each configuration is paired with the reference on the same worlds and seeds: "
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
    return _finish(page, {"means": _means(summaries)})


def _finish(page: Page, figures: Mapping[str, go.Figure]) -> str:
    page.data.append(json_block("payload", {"figures": {k: figure_data(f) for k, f in figures.items()}}))
    page.scripts.append(DRAW_JS + "drawFigures(JSON.parse(document.getElementById('payload').textContent).figures);")
    return page.render()


def _ms(m: Mapping[str, Any], scale: float = 1.0, digits: int = 3) -> str:
    if m.get("mean") is None:
        return "n/a"
    return f"{m['mean'] * scale:.{digits}f} ± {m['std'] * scale:.{digits}f}"


def _real_row(name: str, f: Mapping[str, Any], tasks: list[str]) -> tuple[object, ...]:
    vs, p = _vs(f.get("test"))
    return (
        name,
        len(f["seeds"]),
        *(_ms(f["score_by_task"][t]) for t in tasks),
        _ms(f["macro_average"]),
        vs,
        p,
        _ms(f["selected_review_score"]),
        _ms(f["hacking_rate"], 100, 1),
        _ms(f["interception_rate"], 100, 1),
        f"{f['returned_hacked']}/{f['campaigns']}",
        _ms(f["gain_last_half"]),
        _ms(f["slot_utilisation"], digits=2),
    )


def _real_figures(figures: Mapping[str, Any]) -> dict[str, go.Figure]:
    names = [n for n, f in figures.items() if f["macro_average"].get("mean") is not None]
    means = go.Figure(
        go.Scatter(
            x=names,
            y=[figures[n]["macro_average"]["mean"] for n in names],
            mode="markers",
            error_y={"type": "data", "array": [figures[n]["macro_average"]["std"] for n in names]},
        )
    )
    means.update_layout(
        title="Macro average of the final score per configuration (mean ± std over seeds)",
        yaxis_title="final score (hacked = base)",
        margin={"l": 60, "r": 20, "t": 40, "b": 80},
    )
    curves = go.Figure()
    for n, f in figures.items():
        c = f["curve"]
        if c["mean"]:
            curves.add_trace(go.Scatter(x=c["grid"], y=c["mean"], mode="lines", line={"shape": "hv"}, name=n))
    curves.update_layout(
        title="Best-so-far final score against the budget (macro average, mean over seeds)",
        xaxis_title="fraction of the wall-clock budget",
        yaxis_title="best-so-far final score",
        margin={"l": 60, "r": 20, "t": 40, "b": 50},
    )
    return {"means": means, "curves": curves}


def _real_html(report: Mapping[str, Any]) -> str:
    figures: Mapping[str, Any] = report.get("figures") or {}
    settings = report.get("settings") or {}
    tasks = sorted(next(iter(figures.values()))["score_by_task"]) if figures else []
    page = Page("RSI-Master bench")
    page.add("<h1>RSI-Master bench</h1>")
    shown = ("tasks", "seeds", "budget_s", "slots", "eval_limit", "max_train_steps", "jobs", "quick")
    facts = ", ".join(f"{esc(k)} {esc(settings[k])}" for k in shown if k in settings)
    page.add(
        f"<p>{esc(len(report.get('campaigns') or []))} campaigns, wall {esc(report.get('wall_s'))} s. {facts}.</p>"
        "<p class='muted'>Score: the harness's <code>final</code> score of the returned checkpoint, the base "
        "model's where the auditor found it hacked; each seed's macro average over tasks, then mean ± std over "
        "seeds. Each configuration is paired with the reference on the same (task, seed) campaigns: mean "
        "difference with its bootstrap 95% interval, config / reference - 1 and reference / config - 1, "
        "sign-flip permutation and Wilcoxon p-values.</p>"
    )
    header = (
        "config",
        "seeds",
        *(f"{t} final" for t in tasks),
        "macro avg",
        "vs reference: diff (CI); rel / lead; pairs",
        "p perm / p Wilcoxon",
        "selected review score",
        "hacking %",
        "interception %",
        "returned hacked",
        "gain last half",
        "slot util.",
    )
    page.add(
        "<section id='table'>" + table(header, (_real_row(n, f, tasks) for n, f in figures.items())) + "</section>"
    )
    page.add("<div id='means' class='fig'></div><div id='curves' class='fig'></div>")
    return _finish(page, _real_figures(figures))


def bench_page(report_path: Path) -> Path:
    """The page of the bench report at `report_path`, written beside it: its path."""
    report = json.loads(report_path.read_text())
    name = BENCH_PAGE if "summaries" in report else REAL_BENCH_PAGE
    return write_page(report_path.parent / name, bench_html(report))
