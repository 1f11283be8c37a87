"""Regenerate the report's pictures in docs/ and measure the report in headless Chromium.

Runs two simulated 10-hour campaigns (seconds of CPU each: the clock is simulated), writes the first
one's report and the overview of both, serves the first live (`rsi-master serve`'s app, in a thread)
and appends a Worker to it while its page is open, and photographs the pages with Debian's chromium
driven by Playwright (never a downloaded browser). Prints the report's size, its render times and
how long the live page took to show the new Worker.

    .venv/bin/python scripts/screenshots.py [--out docs] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import io
import secrets
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from rsi_master.cli._serve import bind
from rsi_master.events import WorkerAdd
from rsi_master.expos import ExpOS
from rsi_master.orchestra import PlainDisplay, RunSpec, start_run
from rsi_master.sim import generate_world
from rsi_master.views import overview_html, read_runs, write_page, write_report

POINTS = "#dag .scatterlayer .trace .points path.point"
RENDERS = 5  # loads timed per page


def campaign(root: Path, seed: int, keys: Path) -> Path:
    run_dir = root / f"sim10h-seed{seed}"
    start_run(
        RunSpec(
            budget="10h",
            backend="sim",
            world=generate_world(seed),
            slots=2,
            seed=seed,
            run_dir=run_dir,
            key_dir=str(keys),
        ),
        display=PlainDisplay(io.StringIO()),
        durable=False,
    )
    return run_dir


def render_seconds(page: Page, path: Path, ready: str) -> float:
    """From navigation to the page's last figure drawn (its selector attached)."""
    start = time.perf_counter()
    page.goto(path.resolve().as_uri(), wait_until="load")
    page.wait_for_selector(ready, state="attached")
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs", help="where the PNGs go (default docs)")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = ap.parse_args()
    out = Path(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        keys = root / "keys"
        t = time.perf_counter()
        runs = [campaign(root, seed, keys) for seed in (0, 1)]
        print(f"campaigns: {time.perf_counter() - t:.1f} s for 2")
        t = time.perf_counter()
        report = write_report(runs[0], root / "report.html", key_dir=str(keys))
        print(f"report_write_s: {time.perf_counter() - t:.2f}")
        print(f"report_bytes: {report.stat().st_size}")
        overview = write_page(
            root / "overview.html", overview_html(read_runs(runs, key_dir=str(keys)), root / "o.html")
        )
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            times = [render_seconds(page, report, "#audit .main-svg") for _ in range(RENDERS)]
            print(f"report_render_s: median {statistics.median(times):.2f}, max {max(times):.2f} ({RENDERS} loads)")
            page.select_option("#node-select", "r1")
            page.locator("#dag").scroll_into_view_if_needed()
            page.screenshot(path=out / "report-dag.png")
            page.locator("#best").scroll_into_view_if_needed()
            page.screenshot(path=out / "report-charts.png")
            page.goto(overview.resolve().as_uri(), wait_until="load")
            page.wait_for_selector("#decisions .main-svg", state="attached")
            page.screenshot(path=out / "report-overview.png", full_page=True)
            live_view(page, root, runs[0], keys, out / "live-view.png")
            browser.close()
    for name in ("report-dag.png", "report-charts.png", "report-overview.png", "live-view.png"):
        print(f"wrote {out / name} ({(out / name).stat().st_size} bytes)")


def live_view(page: Page, root: Path, run_dir: Path, keys: Path, png: Path) -> None:
    """The run's live page, a Worker appended while it is open: the seconds until the DAG shows it."""
    from rsi_master.views.live import LiveRuns, make_app, make_server

    sock = bind("127.0.0.1", 0)
    runs = LiveRuns(root, str(keys))
    token = secrets.token_urlsafe(24)
    server = make_server(runs, make_app(runs, token=token, loopback=True))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        page.goto(f"http://127.0.0.1:{sock.getsockname()[1]}/run/{run_dir.name}/?token={token}", wait_until="load")
        page.wait_for_selector(POINTS, state="attached")
        n = page.locator(POINTS).count()
        time.sleep(1.0)  # the page's event stream is open
        with ExpOS.open(run_dir, key_dir=str(keys)) as writer:
            last = max(writer.projection().state.workers.values(), key=lambda w: w.seq).id
            writer.record(
                {"role": "main", "id": "main"},
                WorkerAdd(worker_id="w-live", task="a Worker added while the page is open", direction={"family": "x"},
                          predecessors=[last]),
            )  # fmt: skip
            start = time.perf_counter()
        page.wait_for_function("([s, n]) => document.querySelectorAll(s).length > n", arg=[POINTS, n], timeout=10_000)
        print(f"live_new_node_s: {time.perf_counter() - start:.2f}")
        # Drawn at once where the page placed it; the picture waits for the DAG's next layout.
        page.wait_for_function(
            "() => !document.getElementById('dag').data.some(t => (t.hovertext || []).some(h => h && h.includes('placed until')))",
            timeout=15_000,
        )
        page.select_option("#node-select", "w-live")
        page.locator("#dag").scroll_into_view_if_needed()
        page.screenshot(path=png)
    finally:
        server.handle_exit(0, None)
        thread.join(10)
        runs.close()
        sock.close()


if __name__ == "__main__":
    main()
