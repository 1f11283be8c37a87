"""The real bench's page in headless Chromium: it loads offline with no console error, one table
row per configuration with its paired test against the reference, and both charts drawn."""

from __future__ import annotations

import json

from rsi_master.bench import aggregate
from rsi_master.views import REAL_BENCH_PAGE, bench_page
from tests.bench.test_report import _result

from .test_browser import load


def test_the_real_bench_page_shows_its_table_and_paired_tests_offline(browser, tmp_path):
    configs = ["rsi-master", "no-expos", "serial"]
    scores = {"rsi-master": (0.2, 0.4, 0.3), "no-expos": (0.1, 0.3, 0.1), "serial": (0.3, 0.4, 0.3)}
    results = [_result(c, "knowledge", s, scores[c][s]) for c in configs for s in range(3)]
    figures = aggregate(results, configs, "rsi-master")
    report = {"version": 1, "settings": {"tasks": ["knowledge"], "seeds": [0, 1, 2], "budget_s": 80.0}}
    report |= {"figures": figures, "campaigns": [r.model_dump(mode="json") for r in results], "wall_s": 1.0}
    (tmp_path / "bench.json").write_text(json.dumps(report))
    path = bench_page(tmp_path / "bench.json")
    assert path == tmp_path / REAL_BENCH_PAGE
    loaded = load(browser, path, "#curves .main-svg")
    page = loaded.page
    assert loaded.errors == [] and loaded.requests == [path.resolve().as_uri()]
    rows = page.locator("#table tbody tr")
    assert rows.count() == 3
    assert "reference" in rows.nth(0).inner_text()
    for i, name in enumerate(configs[1:], start=1):
        text, t = rows.nth(i).inner_text(), figures[name]["test"]
        assert name in text and f"{t['p_permutation']:.3g}" in text and "3 pairs" in text
    assert page.locator("#means .scatterlayer .trace .points path").count() == 3
    assert page.locator("#curves .scatterlayer .trace").count() == 3
    page.close()
