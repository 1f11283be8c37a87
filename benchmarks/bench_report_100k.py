"""The report of a long campaign (or of a given run): its size, the time to write it, and its render
in headless Chromium.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_report_100k.py [--events 100000] [--renders 5]
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_report_100k.py --run RUN_DIR [--key-dir DIR]

Builds a campaign ledger of `--events` events (the synthetic campaign of `bench_live_100k.py`:
Workers with six trials each, LLM agent steps, tool-call records, reviews, decisions, the
scheduler's job records), or takes the run at `--run`, writes its report with `rsi-master
report`'s own function (`views.write_report`, to a file of its own: the run is left as it is),
then loads the file in Debian's Chromium through Playwright (the browser the tests use) and times
the navigation to the last figure drawn (`#audit .main-svg`), as `scripts/screenshots.py` does for
a 10-hour campaign: the first load in a fresh browser (cold), and the median and slowest of all.
Then it opens one node's panel (unpacked on selection) and times that. The size is split into
Plotly's runtime, the nodes' packed panels, the figures and the rest. A figure, not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--run", type=Path, help="a run directory to report on, instead of a synthetic campaign")
    ap.add_argument("--key-dir", help="the run's key directory (with --run; default: the run's own lookup)")
    ap.add_argument("--renders", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))

    from rsi_master.views import write_report

    root = Path(tempfile.mkdtemp(prefix="report100k-"))
    try:
        if args.run is not None:
            if not (args.run / "ledger.db").is_file():
                raise SystemExit(f"bench_report_100k: no run at {args.run}")
            run, key_dir = args.run, args.key_dir
            print(f"run: {run}")
        else:
            from bench_live_100k import build

            t = time.perf_counter()
            build(root, args.events)
            print(f"events: {args.events} (built in {time.perf_counter() - t:.1f} s)")
            run, key_dir = root / "runs" / "run", str(root / "keys")
        t = time.perf_counter()
        report = write_report(run, root / "report.html", key_dir=key_dir)
        print(f"report_write_s: {time.perf_counter() - t:.2f}")
        size = report.stat().st_size
        print(f"report_bytes: {size:,} ({size / 2**20:.2f} MiB)")
        print("report_parts: " + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in parts(report.read_text()).items()))
        times, panel_s = render(report, args.renders)
        print(
            f"report_render_s: cold {times[0]:.2f}, median {statistics.median(times):.2f}, "
            f"max {max(times):.2f} ({len(times)} loads)"
        )
        print(f"panel_s: {panel_s:.3f} (a node chosen until its panel shows)")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def parts(text: str) -> dict[str, int]:
    """The page's bytes by what they carry (UTF-8 bytes of each part)."""
    from rsi_master.views._html import plotly_js

    block = re.search(r'<script type="application/json" id="payload">(.*?)</script>', text, re.S)
    payload = json.loads(block.group(1)) if block else {}
    n = {
        "plotly": len(plotly_js().encode()),
        "panels": len(json.dumps(payload.get("nodes", []), separators=(",", ":")).encode()),
        "figures": len(json.dumps(payload.get("figures", {}), separators=(",", ":")).encode()),
    }
    return n | {"rest": len(text.encode()) - sum(n.values())}


def render(report: Path, n: int) -> tuple[list[float], float]:
    from playwright.sync_api import sync_playwright

    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise SystemExit("bench_report_100k: needs Debian's chromium (apt-get install -y chromium)")
    out = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        for _ in range(n):
            start = time.perf_counter()
            page.goto(report.resolve().as_uri(), wait_until="load", timeout=120_000)
            page.wait_for_selector("#audit .main-svg", state="attached", timeout=120_000)
            out.append(time.perf_counter() - start)
        node = page.eval_on_selector("#node-select", "s => s.options[s.options.length - 1].value")
        start = time.perf_counter()
        page.select_option("#node-select", node)
        page.wait_for_function(
            "(w) => document.querySelector('#panel h3')?.textContent.startsWith(w + ' ')", arg=node, timeout=60_000
        )
        panel_s = time.perf_counter() - start
        browser.close()
    if errors:
        raise SystemExit(f"bench_report_100k: page errors: {errors[:3]}")
    return out, panel_s


if __name__ == "__main__":
    raise SystemExit(main())
