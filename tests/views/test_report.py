"""`rsi-master report`: what a report reads off a run (the same numbers as the ledger's readers),
the overview of several runs, and bad input (one clear line, nothing written)."""

from __future__ import annotations

import itertools
import json
import os
import re

import pytest

from rsi_master.cli._main import main
from rsi_master.expos import ExpOS, audit, load_state
from rsi_master.orchestra import load_graph, run_metrics
from rsi_master.views import collect

from .conftest import Run


def test_the_view_holds_what_the_ledger_readers_hold(sim10h: Run):
    view = collect(sim10h.run_dir, key_dir=str(sim10h.key_dir))
    with ExpOS.open(sim10h.run_dir, key_dir=sim10h.key_dir, writable=False) as x:
        st, graph = load_state(x.reader), load_graph(x.reader)
        metrics = run_metrics(x.reader, graph)
        rep = audit(x)
    assert view.problems == [] and view.verify is not None and view.verify.ok and view.finished
    assert {n.id for n in view.nodes} == set(st.workers) | set(st.reviewers)
    assert sorted(view.edges) == sorted(graph.edges())
    assert [d.seq for d in view.decisions] == [d.seq for d in st.decisions]
    assert view.tool_calls_by_fifth == metrics["tool_calls_by_fifth"]
    assert view.audit is not None and view.audit.hacking_rate == rep.hacking_rate
    assert sum(view.audit.observations["weight_provenance"].values()) == len(rep.submissions)
    # Best-so-far rises only, and ends at the best dev score any experiment recorded.
    dev = [p.score for p in view.best["dev"]]
    assert dev == sorted(dev) and dev[-1] == max(s for x in st.experiments.values() if (s := x.dev_score()) is not None)
    assert all(0 <= p.at_s <= view.budget_s * 1.2 for p in view.best["dev"])  # budget seconds, grace included
    # The selected checkpoint's lineage runs from it back to an experiment trained from the base.
    assert view.selected == view.summary["selected"]
    assert view.selected_lineage[0].id == view.selected and view.selected_lineage[-1].parent == "base"
    # Slots never run two jobs at once.
    for slot in {j.slot for j in view.jobs}:
        jobs = sorted((j.start_s, j.end_s) for j in view.jobs if j.slot == slot)
        assert all(a[1] <= b[0] + 1e-6 for a, b in itertools.pairwise(jobs))


def test_the_report_loads_nothing_from_outside(v1: Run, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(v1.run_dir), "-o", str(out), "--key-dir", str(v1.key_dir)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"report: {out}"
    text = out.read_text()
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert not re.search(r"<(script|img|link|iframe)[^>]+(src|href)=", text)
    assert "Plotly" in text and "VERIFIED" in text


def test_the_report_holds_every_nodes_panel_packed(sim10h: Run):
    """Each node's panel is packed on its own; unpacked, it is the node's record whole (the page
    drops nothing), and the page's node list keeps each id and kind plain."""
    import base64
    import zlib

    from rsi_master.views import report_html

    view = collect(sim10h.run_dir, key_dir=str(sim10h.key_dir))
    text = report_html(view)
    block = re.search(r'<script type="application/json" id="payload">(.*?)</script>', text)
    assert block is not None
    nodes = json.loads(block.group(1))["nodes"]
    assert [(n["id"], n["kind"]) for n in nodes] == [(n.id, n.kind) for n in view.nodes]
    for packed, node in zip(nodes, view.nodes, strict=True):
        assert set(packed) == {"id", "kind", "packed"}
        assert json.loads(zlib.decompress(base64.b64decode(packed["packed"]))) == node.model_dump(mode="json")
    # A live page's nodes stay plain: its deltas replace them record by record.
    live = report_html(view, live="events")
    assert '"packed":' not in live and json.dumps(view.nodes[0].id) in live


def test_the_default_report_is_the_run_directorys_and_the_audit_accepts_it(v1: Run, capsys):
    assert main(["report", str(v1.run_dir), "--key-dir", str(v1.key_dir)]) == 0
    assert (v1.run_dir / "report.html").is_file()
    with ExpOS.open(v1.run_dir, key_dir=v1.key_dir, writable=False) as x:
        assert audit(x).run_dir_issues == []


def test_a_directory_by_the_reports_name_is_not_the_report(tmp_path):
    from tests.helpers import v1_run

    run_dir, key_dir = v1_run(tmp_path)
    (run_dir / "report.html").mkdir()
    with ExpOS.open(run_dir, key_dir=key_dir, writable=False) as x:
        assert audit(x).run_dir_issues == ["run directory: report.html was added outside the tools"]


def test_an_overview_of_a_runs_directory_keeps_an_unreadable_runs_row(v1: Run, tmp_path, capsys):
    runs = tmp_path / "runs"
    runs.mkdir()
    os.symlink(v1.run_dir, runs / "a")
    broken = runs / "b"
    broken.mkdir()
    (broken / "ledger.db").write_bytes(b"not a database")
    (broken / "ledger.pub").write_bytes(b"not a key")
    assert main(["report", str(runs), "--key-dir", str(v1.key_dir)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"report: {runs / 'index.html'}", "runs: 2"]
    text = (runs / "index.html").read_text()
    assert text.count("unreadable") == 1 and re.search(r"<td>b</td><td><span class='bad'>unreadable: ", text)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "no such run directory"),
        (lambda p: p.mkdir(), "neither a run directory nor a directory of runs"),
        (lambda p: p.write_text("x"), "not a directory"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, make, message):
    target = tmp_path / "run"
    make(target)
    before = sorted(tmp_path.rglob("*"))
    assert main(["report", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and err[0].startswith("rsi-master: error:")
    assert sorted(tmp_path.rglob("*")) == before


def test_an_output_in_a_missing_directory_is_one_line(v1: Run, tmp_path, capsys):
    assert main(["report", str(v1.run_dir), "-o", str(tmp_path / "no" / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not exist" in err[0]
    assert not (tmp_path / "no").exists()


def test_many_lineages_are_drawn_as_the_best_few_and_one_grey_trace_keeping_every_point():
    """A long campaign's thousands of lineages: the `LINEAGE_TRACES` best (highest dev score) get
    traces of their own, every other point is in one grey trace (nothing dropped)."""
    from types import SimpleNamespace

    from rsi_master.views._figures import LINEAGE_TRACES, lineage_figure
    from rsi_master.views._model import CurvePoint

    lineages = {
        f"exp-{i:05d}": [
            CurvePoint(at_s=60.0 * (i + j), score=(i % 97) / 100 + j / 1000, experiment=f"x{i}-{j}") for j in range(3)
        ]
        for i in range(400)
    }
    fig = lineage_figure(SimpleNamespace(lineages=lineages, budget_s=36_000.0))
    assert len(fig.data) == LINEAGE_TRACES + 1
    best = set(sorted(lineages, key=lambda r: -max(p.score for p in lineages[r]))[:LINEAGE_TRACES])
    assert [t.name for t in fig.data[:-1]] == [r for r in lineages if r in best]
    grey = fig.data[-1]
    assert grey.name == f"{400 - LINEAGE_TRACES} other lineages"
    drawn = {t for trace in fig.data for t in trace.text if t}
    assert len(drawn) == 3 * 400  # every point, once

    few = {r: lineages[r] for r in list(lineages)[:5]}
    assert [t.name for t in lineage_figure(SimpleNamespace(lineages=few, budget_s=36_000.0)).data] == list(few)


def test_past_2000_lineages_the_rest_are_a_density_that_counts_every_point_and_says_so():
    from types import SimpleNamespace

    from rsi_master.views._figures import LINEAGE_DENSITY, LINEAGE_TRACES, lineage_figure
    from rsi_master.views._html import figure_data
    from rsi_master.views._model import CurvePoint

    n = LINEAGE_DENSITY + 1
    lineages = {
        f"exp-{i:05d}": [
            CurvePoint(at_s=7.0 * (i + j), score=(i % 89) / 100 + j / 1000, experiment=f"x{i}-{j}")
            for j in range(1 + i % 3)
        ]
        for i in range(n)
    }
    fig = lineage_figure(SimpleNamespace(lineages=lineages, budget_s=36_000.0))
    density, *shown = fig.data
    assert density.type == "heatmap" and len(shown) == LINEAGE_TRACES
    assert all(t.type == "scatter" for t in shown)
    best = {t.name for t in shown}
    rest_points = sum(len(pts) for r, pts in lineages.items() if r not in best)
    assert sum(c for row in density.z for c in row if c) == rest_points  # every point counted once
    assert f"{n - LINEAGE_TRACES} lineages shown as density" in fig.layout.title.text
    assert len(json.dumps(figure_data(fig))) < 60_000  # the density is a grid, not the points

    at_limit = dict(list(lineages.items())[:LINEAGE_DENSITY])
    assert all(t.type == "scatter" for t in lineage_figure(SimpleNamespace(lineages=at_limit, budget_s=36_000.0)).data)


def test_the_pages_plotly_bundle_is_plotly_pys_version_and_draws_the_trace_types_it_claims():
    from plotly.offline import get_plotlyjs_version

    from rsi_master.views._html import BUNDLED_TRACES, plotly_js

    js = plotly_js()
    assert js.startswith(f"/**\n* plotly.js (cartesian - minified) v{get_plotlyjs_version()}\n")
    assert set(re.findall(r'moduleType:"trace",name:"(\w+)"', js)) == BUNDLED_TRACES
    assert js.rstrip().endswith("window.Plotly = Plotly;\nreturn Plotly;\n}));")
    assert "</script" not in js.lower()  # inlined in a script element
    from importlib import resources

    licence = (resources.files("rsi_master.views") / "assets" / "plotly-LICENSE.txt").read_text()
    assert licence.startswith("MIT License") and "Plotly" in licence


def test_a_figure_with_a_trace_type_the_bundle_lacks_is_refused():
    import plotly.graph_objects as go

    from rsi_master.views._html import figure_data

    assert figure_data(go.Figure(go.Histogram2d(x=[1, 2], y=[3, 4])))["data"]
    with pytest.raises(ValueError, match=r"\['scattergl'\] are not in the pages' Plotly bundle"):
        figure_data(go.Figure(go.Scattergl(x=[1], y=[2])))


def _trace_types(block: object) -> set[str]:
    """The trace types of every figure (a record with a `data` list and a `layout`) in a page's JSON."""
    if isinstance(block, dict):
        if isinstance(block.get("data"), list) and "layout" in block:
            return {t.get("type", "scatter") for t in block["data"]}
        return set().union(*map(_trace_types, block.values()))
    return set().union(*map(_trace_types, block)) if isinstance(block, list) else set()


def test_every_figure_of_the_report_overview_and_bench_page_is_of_a_bundled_trace_type(sim10h: Run, v1: Run):
    from pathlib import Path

    from rsi_master.views import bench_html, overview_html, read_runs, report_html
    from rsi_master.views._html import BUNDLED_TRACES

    entries = read_runs([sim10h.run_dir, v1.run_dir], key_dir=str(sim10h.key_dir))
    bench = json.loads((Path(__file__).parents[1] / "fixtures" / "sim-bench.json").read_text())
    view = collect(sim10h.run_dir, key_dir=str(sim10h.key_dir))
    drawn: set[str] = set()
    for page in (report_html(view), overview_html(entries, None), bench_html(bench)):
        blocks = re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', page)
        types = set().union(*(_trace_types(json.loads(b)) for b in blocks))
        assert types and types <= BUNDLED_TRACES
        drawn |= types
    assert {"scatter", "bar", "heatmap"} <= drawn
