"""The report of a long campaign: its size, the time to write it, and its render in headless Chromium.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_report_100k.py [--events 100000] [--renders 3]

Builds a campaign ledger of `--events` events (the synthetic campaign of `bench_live_100k.py`:
Workers with six trials each, LLM agent steps, tool-call records, reviews, decisions, the
scheduler's job records), writes its report with `rsi-master report`'s own function
(`views.write_report`), then loads the file in Debian's Chromium through Playwright (the browser
the tests use) and times the navigation to the last figure drawn (`#audit .main-svg`), as
`scripts/screenshots.py` does for a 10-hour campaign. A figure, not a test.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--renders", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_live_100k import build

    from rsi_master.views import write_report

    root = Path(tempfile.mkdtemp(prefix="report100k-"))
    try:
        t = time.perf_counter()
        build(root, args.events)
        print(f"events: {args.events} (built in {time.perf_counter() - t:.1f} s)")
        run = root / "runs" / "run"
        t = time.perf_counter()
        report = write_report(run, root / "report.html", key_dir=str(root / "keys"))
        print(f"report_write_s: {time.perf_counter() - t:.2f}")
        size = report.stat().st_size
        print(f"report_bytes: {size:,} ({size / 2**20:.2f} MiB)")
        times = render(report, args.renders)
        print(f"report_render_s: median {statistics.median(times):.2f}, max {max(times):.2f} ({len(times)} loads)")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def render(report: Path, n: int) -> list[float]:
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
        for _ in range(n):
            start = time.perf_counter()
            page.goto(report.resolve().as_uri(), wait_until="load", timeout=120_000)
            page.wait_for_selector("#audit .main-svg", state="attached", timeout=120_000)
            out.append(time.perf_counter() - start)
        browser.close()
    if errors:
        print(f"page errors: {errors[:3]}")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
