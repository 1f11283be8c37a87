"""How long a new node takes to be drawn in the research DAG of a live page in a real browser, on
a long campaign.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_live_browser.py [--events 100000] [--workers 20]

Builds a campaign ledger of `--events` events as `bench_live_100k.py` does, serves it as
`rsi-master serve` does (`LiveRuns`, `make_app`, uvicorn on a loopback port, in a thread of this
process) and opens its live page in headless Chromium (Debian's, driven by Playwright, as the
browser tests do). Then, `--workers` times, through a writable session: the campaign's next
Worker's events (about 90: added, its trials, steps and tool calls, finalized, reviewed, decided
on) appended in one batch, and the time from that append until the new Worker's marker is drawn in
the page's DAG (in the figure's data and as an SVG point), whether the page drew it provisionally
or a DAG build that already had it came first. Between two Workers the page is left alone for
`--gap` seconds (the server's figure builds go on meanwhile). Prints the median and the max, each
time, and the load average (a shared machine's timings are upper bounds).
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

DRAWN = """(id) => { const gd = document.getElementById('dag');
  const t = (gd.data || []).find(t => t.name === 'workers'); if (!t) return null;
  const k = (t.customdata || []).indexOf(id); if (k < 0) return null;
  const drawn = document.querySelectorAll('#dag .scatterlayer .trace .points path.point').length;
  const held = gd.data.filter(t => t.mode !== 'lines').reduce((n, t) => n + t.customdata.length, 0);
  if (drawn !== held) return null;
  return (t.hovertext[k] || '').includes('placed until') ? 'provisional' : 'laid out'; }"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=20, help="Workers appended, one at a time")
    ap.add_argument("--gap", type=float, default=1.0, help="seconds between a Worker drawn and the next appended")
    ap.add_argument("--dir", help="work directory (default: a fresh temporary one, removed after)")
    args = ap.parse_args()

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_live_100k import build
    from playwright.sync_api import sync_playwright

    from rsi_master.cli._serve import bind
    from rsi_master.expos import ExpOS
    from rsi_master.views.live import LiveRuns, make_app, make_server

    chromium = os.environ.get("RSI_MASTER_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("needs Debian's chromium (apt-get install -y chromium) or RSI_MASTER_CHROMIUM", file=sys.stderr)
        return 2
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-live-browser-"))
    try:
        t = time.perf_counter()
        campaign = build(root, args.events)
        print(
            f"python {sys.version.split()[0]}; ledger of {args.events} events built in {time.perf_counter() - t:.1f} s"
        )
        runs = LiveRuns(root / "runs", str(root / "keys"))
        sock = bind("127.0.0.1", 0)
        token = secrets.token_urlsafe(24)
        server = make_server(runs, make_app(runs, token=token, loopback=True))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/run/run/"
        times: list[float] = []
        how: list[str] = []
        checked: list[bool] = []  # whether a verify+audit pass (each minute while a run grows) ran meanwhile
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                errors: list[str] = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                t = time.perf_counter()
                page.goto(f"{url}?token={token}", wait_until="load", timeout=600_000)
                page.wait_for_selector(
                    "#dag .scatterlayer .trace .points path.point", state="attached", timeout=600_000
                )
                page.wait_for_selector("body[data-size]", state="attached", timeout=60_000)  # the stream is open
                print(f"live page loaded, its DAG drawn and its stream open in {time.perf_counter() - t:.1f} s")
                with ExpOS.open(root / "runs" / "run", key_dir=str(root / "keys")) as writer:
                    for _ in range(args.workers):
                        time.sleep(args.gap)
                        drafts = campaign.worker()  # type: ignore[attr-defined]
                        wid = f"w{campaign.n_worker}"  # type: ignore[attr-defined]
                        checks = runs.runs["run"].checks
                        t = time.perf_counter()
                        writer.run.record_many(drafts)
                        shown = page.wait_for_function(DRAWN, arg=wid, timeout=60_000, polling="raf")
                        times.append(time.perf_counter() - t)
                        how.append(str(shown.json_value()))
                        checked.append(runs.runs["run"].checks != checks)
                        also = ", a verify+audit pass meanwhile" if checked[-1] else ""
                        print(f"  {wid} ({len(drafts)} events): drawn after {times[-1]:.2f} s ({how[-1]}{also})")
                browser.close()
        finally:
            server.should_exit = True
            runs.stopping = True
            thread.join(10)
            runs.close()
            sock.close()
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"a new Worker drawn in the DAG: median {statistics.median(times):.2f} s, max {max(times):.2f} s "
            f"over {len(times)} ({how.count('provisional')} provisionally, {sum(checked)} beside a verify+audit "
            f"pass); load average {load}"
        )
        print(f"page errors: {errors or 'none'}")
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
