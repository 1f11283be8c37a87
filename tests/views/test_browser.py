"""The report and the overview in headless Chromium: they load with no console error and no network
request, the DAG draws one marker per Worker and Reviewer in the ledger, and clicking a node shows
its experiment ids."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rsi_master.expos import ExpOS, by_worker, load_state
from rsi_master.views import overview_html, read_runs, write_page, write_report

from .conftest import Run

POINTS = "#dag .scatterlayer .trace .points path.point"


@dataclass
class Loaded:
    page: object
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    seconds: float = 0.0


def load(browser, path: Path, ready: str) -> Loaded:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    out = Loaded(page)
    page.on("console", lambda m: out.errors.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: out.errors.append(str(e)))
    page.on("request", lambda r: out.requests.append(r.url))
    page.on("dialog", lambda d: (out.errors.append(f"dialog: {d.message}"), d.dismiss()))
    start = time.perf_counter()
    page.goto(path.resolve().as_uri(), wait_until="load")
    page.wait_for_selector(ready, state="attached")
    out.seconds = time.perf_counter() - start
    return out


def ledger_nodes(run: Run) -> tuple[int, dict[str, list[str]]]:
    """Workers and Reviewers in the ledger, and each Worker's experiment ids, from the projection."""
    with ExpOS.open(run.run_dir, key_dir=run.key_dir, writable=False) as x:
        st = load_state(x.reader)
        return len(st.workers) + len(st.reviewers), {w: [e.id for e in by_worker(st, w)] for w in st.workers}


def click_node(loaded: Loaded, node: str) -> None:
    """A real mouse click on the node's marker, found by its drawn label (a trace's labels and
    markers are drawn in the same order)."""
    page = loaded.page
    where = page.evaluate(
        """(id) => { const traces = document.querySelectorAll('#dag .scatterlayer .trace');
           for (let t = 0; t < traces.length; t++) {
             const labels = [...traces[t].querySelectorAll('.textpoint text')].map(e => e.textContent);
             const i = labels.indexOf(id); if (i >= 0) return [t, i]; }
           return null; }""",
        node,
    )
    assert where is not None, node
    trace, i = where
    point = page.locator("#dag .scatterlayer .trace").nth(trace).locator(".points path.point").nth(i)
    point.scroll_into_view_if_needed()
    box = point.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x - 30, y - 30)
    page.mouse.move(x, y, steps=5)
    # Plotly reports a click on the point it hovers: wait until it shows that point's label.
    page.wait_for_selector("#dag .hoverlayer .hovertext", timeout=5000)
    page.mouse.click(x, y)


def choose(page, node: str) -> str:
    """Choose `node` in the node list; the panel's text once it shows that node (a report's panel is
    unpacked when its node is chosen, after the choice returns)."""
    page.select_option("#node-select", node)
    page.wait_for_function(
        "(w) => document.querySelector('#panel h3')?.textContent.startsWith(w + ' ')", arg=node, timeout=5000
    )
    return page.locator("#panel").inner_text()


def check_report(browser, run: Run, out: Path) -> None:
    """The report at `out` loads offline with no console error, draws every node of the ledger,
    and a click on each of two Workers shows that Worker's experiment ids."""
    loaded = load(browser, out, POINTS)
    page = loaded.page
    assert loaded.errors == []
    assert loaded.requests == [out.resolve().as_uri()]  # the page itself, nothing else
    n_nodes, experiments = ledger_nodes(run)
    assert page.locator(POINTS).count() == n_nodes
    assert page.locator("#verify .ok").inner_text() == "VERIFIED"
    assert page.locator("#problems").count() == 0
    workers = [w for w, xs in experiments.items() if xs][:2]
    assert workers
    for w in workers:
        click_node(loaded, w)
        page.wait_for_function(
            "(w) => document.querySelector('#panel h3')?.textContent.startsWith(w + ' ')", arg=w, timeout=5000
        )
        panel = page.locator("#panel").inner_text()
        for xid in experiments[w]:
            assert xid in panel
    assert loaded.errors == []
    page.close()


@pytest.mark.heavy
@pytest.mark.parametrize("which", ["sim10h", "simllm", "v1"])
def test_the_report_loads_offline_and_its_dag_has_every_node(which, request, browser, tmp_path):
    run: Run = request.getfixturevalue(which)
    check_report(browser, run, write_report(run.run_dir, tmp_path / "report.html", key_dir=str(run.key_dir)))


@pytest.mark.slow
def test_a_short_real_run_writes_a_report_that_loads(browser, tmp_path, capsys):
    from rsi_master.cli._main import main

    run = Run(tmp_path / "run", tmp_path / "keys")
    argv = ["run", "--task", "arithmetic", "--budget", "120s", "--dir", str(run.run_dir), "--key-dir", str(run.key_dir)]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"report: {run.run_dir / 'report.html'}" in lines
    check_report(browser, run, run.run_dir / "report.html")


def test_llm_transcripts_are_shown_folded(simllm, browser, tmp_path, capsys):
    out = write_report(simllm.run_dir, tmp_path / "report.html", key_dir=str(simllm.key_dir))
    loaded = load(browser, out, POINTS)
    page = loaded.page
    main = page.locator("#main-transcript details")
    assert main.count() >= 1 and main.first.get_attribute("open") is None  # folded until opened
    assert "worker_add" not in main.first.inner_text()
    main.first.locator("summary").click()
    assert "worker_add → ok" in main.first.inner_text()  # the Main's first turn added a Worker
    choose(page, "w1")
    turns = page.locator("#panel details")
    assert "Transcript" in page.locator("#panel").inner_text() and turns.count() >= 1
    assert loaded.errors == []
    page.close()


def test_a_run_that_does_not_verify_shows_its_problems_first_in_red(v1, browser, tmp_path):
    # The report is read against another key directory: nothing vouches for the run.
    out = write_report(v1.run_dir, tmp_path / "report.html", key_dir=str(tmp_path / "other-keys"))
    loaded = load(browser, out, POINTS)
    page = loaded.page
    assert loaded.errors == []
    problems = page.locator("#problems")
    assert "does not verify" in problems.inner_text()
    color = problems.evaluate("e => getComputedStyle(e).color")
    assert color == "rgb(153, 0, 0)"
    # Problems come before the summary in the page.
    assert page.evaluate(
        "document.getElementById('problems').compareDocumentPosition(document.getElementById('summary')) & 4"
    )
    assert page.locator("#verify .bad").inner_text() == "FAILED"
    page.close()


def test_agent_text_is_shown_as_text_never_run(v1, browser, tmp_path):
    from rsi_master.views import collect, report_html

    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>&lt;"
    view = collect(v1.run_dir, key_dir=str(v1.key_dir))
    node = view.nodes[0].model_copy(update={"task": hostile, "summary": hostile})
    # A node id is an LLM Main's choice too: drawn as a label, listed as an option.
    named = view.nodes[1].model_copy(update={"id": hostile})
    decisions = [d.model_copy(update={"rationale": hostile}) for d in view.decisions]
    view = view.model_copy(update={"nodes": [node, named, *view.nodes[2:]], "decisions": decisions})
    out = write_page(tmp_path / "hostile.html", report_html(view))
    loaded = load(browser, out, POINTS)
    page = loaded.page
    assert hostile in choose(page, node.id)
    choose(page, hostile)
    assert page.locator("#panel h3").inner_text().startswith(hostile)
    assert hostile in page.locator("#dag").inner_text()  # the label, as text
    assert page.locator("img").count() == 0
    assert loaded.errors == []  # no alert dialog, no failed image load
    assert loaded.requests == [out.resolve().as_uri()]
    page.close()


def test_the_overview_compares_runs_offline(sim10h, v1, browser, tmp_path):
    entries = read_runs([sim10h.run_dir, v1.run_dir], key_dir=str(sim10h.key_dir))
    out = write_page(tmp_path / "overview.html", overview_html(entries, tmp_path / "overview.html"))
    loaded = load(browser, out, "#curves .scatterlayer")
    page = loaded.page
    assert loaded.errors == []
    assert loaded.requests == [out.resolve().as_uri()]
    rows = page.locator("#runs tbody tr")
    assert rows.count() == 2
    # The v1 run's key directory is not the one given: its row says it fails to verify.
    assert "OK" in rows.nth(0).inner_text() and "FAILED" in rows.nth(1).inner_text()
    for fig in ("#curves", "#sizes", "#decisions"):
        assert page.locator(f"{fig} .main-svg").count() >= 1
    page.close()


def test_the_sim_bench_page_shows_its_table_and_paired_tests_offline(browser, tmp_path):
    """The page of a real bench's JSON (`tests/fixtures/sim-bench.json`: three configurations, 8
    landscapes x 2 seeds, `default` preset), one row per configuration with its paired test."""
    import json

    from rsi_master.views import BENCH_PAGE, bench_html

    report = json.loads((Path(__file__).parents[1] / "fixtures" / "sim-bench.json").read_text())
    page_path = write_page(tmp_path / BENCH_PAGE, bench_html(report))
    loaded = load(browser, page_path, "#means .main-svg")
    page = loaded.page
    assert loaded.errors == [] and loaded.requests == [page_path.resolve().as_uri()]
    rows = page.locator("#table tbody tr")
    summaries = report["summaries"]
    assert rows.count() == len(summaries) == 3
    for i, s in enumerate(summaries):
        text = rows.nth(i).inner_text()
        assert s["config"] in text and f"{s['mean']:.3f}" in text
        if s["test"] is None:
            assert "reference" in text
        else:
            assert f"{s['test']['p_permutation']:.3g}" in text and f"{s['test']['pairs']} pairs" in text
    page.close()


@pytest.mark.slow
def test_the_sim_bench_writes_its_table_and_paired_tests_as_a_page_that_loads_offline(browser, tmp_path, capsys):
    import json

    from rsi_master.cli._main import main

    out = tmp_path / "bench"
    argv = ["bench", "--backend", "sim", "--configs", "rsi-master,asha", "--landscapes", "1", "--seeds", "2"]
    assert main([*argv, "--budget", "10m", "--jobs", "1", "--no-plot", "--out", str(out)]) == 0
    page_path = out / "sim-bench.html"
    assert f"html: {page_path}" in capsys.readouterr().out
    summaries = json.loads((out / "sim-bench.json").read_text())["summaries"]
    loaded = load(browser, page_path, "#means .main-svg")
    page = loaded.page
    assert loaded.errors == [] and loaded.requests == [page_path.resolve().as_uri()]
    rows = page.locator("#table tbody tr")
    assert rows.count() == len(summaries) == 2
    tested = next(s for s in summaries if s["test"] is not None)
    text = rows.nth(summaries.index(tested)).inner_text()
    assert f"{tested['test']['p_permutation']:.3g}" in text and f"{tested['test']['pairs']} pairs" in text
    assert "reference" in rows.nth(1 - summaries.index(tested)).inner_text()
    page.close()
