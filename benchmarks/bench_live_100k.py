"""The live view's cost per update on a long run: before (the view rebuilt from the whole run) and
after (the view's fold and a page's delta).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_live_100k.py [--events 100000] [--updates 10]

Builds a campaign ledger of `--events` events through the real ledger API (the synthetic campaign
of `bench_projection.py`: Workers with six trials each, LLM agent steps, tool-call records,
reviews, decisions, the scheduler's job records) on top of a real run's contract and
`orchestra.start`, then opens it as `rsi-master serve` does (`LiveRuns`) and takes the first look.
Then, through a writable session:

- one new event (a `worker.add`) at a time: the look that follows (the projection's advance, the
  fold, taking in the figures built since and, when a figure's schedule came due, the view its
  build is handed on the figure thread) and the delta a page that saw the run before it gets,
  encoded as JSON;
- a Worker's worth of events (the campaign's next Worker, about 90 events) in one batch, the same;
- before: one new event, then the view read from the whole run (`collect_open`) and the page's
  whole payload (`report_payload`), as the live view did at every new event.

The updates that handed a figure build to the figure thread are counted and reported apart (they
pay for the view it is drawn from); the builds themselves run beside the updates, on their own
thread, as they do in the server (whose GIL switch interval the benchmark sets too). Timings on a shared machine are figures, not test assertions.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def build(root: Path, n: int) -> object:
    """A run of `n` events; returns the campaign generator, to write more of it."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_projection import Campaign

    from rsi_master.events import OrchestraStart
    from rsi_master.expos import ExpOS
    from rsi_master.orchestra import ORCHESTRA

    with ExpOS.create(root / "runs" / "run", "arithmetic", eval_limit=3, key_dir=root / "keys") as expos:
        expos.record(
            ORCHESTRA,
            OrchestraStart(
                version=1,
                task="arithmetic",
                budget_s=36000.0,
                slots=2,
                main="policy",
                reviewer="evidence",
                eval_limit=3,
            ),
        )
        campaign = Campaign(expos.contract.base_model_artifact)
        campaign.seq = expos.run.ledger.size()
        drafts = campaign.drafts(n - campaign.seq)
        for i in range(0, len(drafts), 5000):
            expos.run.record_many(drafts[i : i + 5000])
        campaign.seq = expos.run.ledger.size()  # drafts() trims its last Worker: go on from the ledger
    return campaign


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--updates", type=int, default=10)
    ap.add_argument("--dir", help="work directory (default: a fresh temporary one, removed after)")
    args = ap.parse_args()

    from rsi_master.events import WorkerAdd
    from rsi_master.expos import ExpOS
    from rsi_master.views._collect import collect_open
    from rsi_master.views._report import report_payload
    from rsi_master.views.live import SWITCH_S, LiveRun, LiveRuns

    sys.setswitchinterval(SWITCH_S)  # as the server sets it while it serves (`make_server`)

    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-live-100k-"))
    try:
        t = time.perf_counter()
        campaign = build(root, args.events)
        print(
            f"python {sys.version.split()[0]}; ledger of {args.events} events built in {time.perf_counter() - t:.1f} s"
        )
        runs = LiveRuns(root / "runs", str(root / "keys"))
        call = lambda fn, *a: runs.pool.submit(fn, *a).result()  # noqa: E731  (the view's one worker thread)
        try:
            t = time.perf_counter()
            live = call(runs.refresh, "run")
            assert isinstance(live, LiveRun) and live.fold is not None
            first = time.perf_counter() - t
            print(f"first look (fold, verify, audit, figures): {first:.2f} s at {live.size} events")
            t = time.perf_counter()
            call(live.payload)
            print(f"the whole page's payload (a page's first look): {time.perf_counter() - t:.2f} s")

            def update() -> tuple[float, int, int, int]:
                since, figs, begun, taken = live.size, live.held(), live.drawing.started, live.drawing.builds
                t = time.perf_counter()
                call(runs.refresh, "run")
                delta = call(live.delta, since, figs)
                json.dumps(delta)  # what the server then sends
                took = time.perf_counter() - t
                nodes = len(delta.get("nodes", []))  # type: ignore[arg-type]
                return took, live.drawing.started - begun, live.drawing.builds - taken, nodes

            main_actor = {"role": "main", "id": "main"}
            with ExpOS.open(root / "runs" / "run", key_dir=str(root / "keys")) as writer:
                for i in range(2):  # each figure's second build: its cost is measured from then on
                    writer.record(
                        main_actor,
                        WorkerAdd(worker_id=f"warm-{i}", task="t", direction={"family": "x"}, predecessors=[]),
                    )
                    update()
                one = []
                for i in range(args.updates):
                    writer.record(
                        main_actor,
                        WorkerAdd(worker_id=f"bench-{i}", task="t", direction={"family": "x"}, predecessors=[]),
                    )
                    one.append(update())
                report("one new event", one)
                batch = []
                for _ in range(args.updates):
                    drafts = campaign.worker()  # type: ignore[attr-defined]
                    writer.run.record_many(drafts)
                    batch.append(update())
                report(f"a Worker's worth ({len(drafts)} events)", batch)

                writer.record(
                    main_actor, WorkerAdd(worker_id="before", task="t", direction={"family": "x"}, predecessors=[])
                )

                def before() -> float:
                    assert live.expos is not None and live.checked is not None
                    t = time.perf_counter()
                    report_payload(collect_open(live.expos.reader, live.checked))
                    return time.perf_counter() - t

                old = call(before)
            after = statistics.median(x[0] for x in one)
            print(f"before (view and payload from the whole run), one new event: {old:.2f} s")
            print(f"ratio before / after (median, one new event): x{old / after:.0f}")
            print(f"verify+audit passes: {live.checks}")
            costs = ", ".join(f"{k} {d.cost:.2f} s" for k, d in live.drawing.figures.items())
            print(f"each figure's last build on the figure thread (with the view it is drawn from): {costs}")
            print(f"figure builds begun: {live.drawing.started}, taken in: {live.drawing.builds}")
        finally:
            runs.close()
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    return 0


def report(what: str, rows: list[tuple[float, int, int, int]]) -> None:
    times = [r[0] for r in rows]
    plain = [r[0] for r in rows if r[1] == 0]
    print(
        f"{what}: update + delta median {statistics.median(times) * 1000:.1f} ms, "
        f"max {max(times) * 1000:.1f} ms over {len(rows)}; {sum(r[1] for r in rows)} figure builds handed "
        f"to the figure thread by {len(rows) - len(plain)} of them, {sum(r[2] for r in rows)} taken in; "
        "those that handed none: median "
        + (f"{statistics.median(plain) * 1000:.1f} ms over {len(plain)}" if plain else "n/a")
        + f"; nodes per delta {statistics.median(r[3] for r in rows):.0f}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
