"""Ledger and artifact store benchmark (issue 2 targets).

    .venv/bin/python benchmarks/bench_ledger.py [--quick] [--dir DIR]
    .venv/bin/python benchmarks/bench_ledger.py --backends [--quick] [--pg-url URL]

`--backends`: appends only (single, batched, 4 writers) on SQLite and on PostgreSQL in one
run, with the ratios; PostgreSQL is a throwaway local cluster (tests/pg_cluster.py) unless
--pg-url names a database where `rsi-master ledger-install` was run.

Prints figures and their ratio to the target. Run on demand, not in CI: timings on a
shared machine are not test assertions.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rsi_master.artifacts import ArtifactStore, provenance
from rsi_master.rundir import RunDir, verify_run

ACTOR = {"role": "worker", "id": "bench"}


def draft(i: int, artifacts: list | None = None) -> dict:
    return {"kind": "bench.event", "actor": ACTOR, "payload": {"i": i, "note": "x" * 40}, "artifacts": artifacts or []}


def bench_single(root: Path, n: int, ledger: str | None = None) -> float:
    with RunDir.create(root / "single", ledger=ledger) as run:
        t = time.perf_counter()
        for i in range(n):
            run.record(draft(i))
        return n / (time.perf_counter() - t)


def bench_batched(root: Path, n: int, batch: int = 1000, ledger: str | None = None) -> float:
    with RunDir.create(root / "batched", ledger=ledger) as run:
        t = time.perf_counter()
        for start in range(0, n, batch):
            run.record_many([draft(i) for i in range(start, start + batch)])
        return n / (time.perf_counter() - t)


def _writer(path: str, key_dir: str, n: int) -> None:
    os.environ["RSI_MASTER_KEY_DIR"] = key_dir
    with RunDir.open(path, writable=True) as run:
        for i in range(n):
            run.record(draft(i))


def bench_concurrent(root: Path, key_dir: str, procs: int, n: int, ledger: str | None = None) -> float:
    RunDir.create(root / "concurrent", ledger=ledger).close()
    ctx = mp.get_context("spawn")
    ps = [ctx.Process(target=_writer, args=(str(root / "concurrent"), key_dir, n)) for _ in range(procs)]
    t = time.perf_counter()
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    return procs * n / (time.perf_counter() - t)


def build_big(root: Path, n: int) -> Path:
    """n events in a chain of data -> train -> eval steps, every third one with artifacts."""
    path = root / "big"
    with RunDir.create(path) as run:
        prev = run.store.put_bytes(b"base model")
        batch = []
        for i in range(n):
            refs = []
            if i % 3 == 0:
                out = run.store.put_bytes(f"checkpoint {i}".encode())
                refs = [{"digest": prev, "role": "input"}, {"digest": out, "role": "output"}]
                prev = out
            batch.append(draft(i, refs))
            if len(batch) == 5000:
                run.record_many(batch)
                batch = []
        if batch:
            run.record_many(batch)
        bench_big_last = prev
    (path / "LAST").write_text(bench_big_last)
    return path


def bench_artifact(root: Path, size: int) -> tuple[float, float]:
    src = root / "big.bin"
    chunk = os.urandom(1 << 20)
    with open(src, "wb") as fh:
        for i in range(size >> 20):
            fh.write(i.to_bytes(8, "big") + chunk[8:])  # distinct content: no dedup shortcut
    # Warm the page cache for both measurements alike.
    plain_t = time.perf_counter()
    h = hashlib.sha256()
    with open(src, "rb") as fh:
        while b := fh.read(1 << 22):
            h.update(b)
    plain = size / (time.perf_counter() - plain_t)
    plain_t = time.perf_counter()
    h = hashlib.sha256()
    with open(src, "rb") as fh:
        while b := fh.read(1 << 22):
            h.update(b)
    plain = max(plain, size / (time.perf_counter() - plain_t))
    store = ArtifactStore(root / "store")
    t = time.perf_counter()
    store.put_file(src)
    copied = size / (time.perf_counter() - t)
    with open(src, "r+b") as fh:  # new content, so the hand-over is not a dedup (which just unlinks)
        fh.write(b"moved!!!")
    os.sync()  # the producer's own writes are flushed before the hand-over is timed
    t = time.perf_counter()
    store.put_file(src, move=True)
    moved = size / (time.perf_counter() - t)
    return copied, moved, plain


def bench_backends(root: Path, key_dir: str, quick: bool, pg_url: str | None) -> list[tuple]:
    """The append figures on SQLite and PostgreSQL, same sizes, same machine, one run."""
    import contextlib

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests import pg_cluster

    from rsi_master.ledger import install_postgres

    n_single, n_batched, n_conc = (300, 20_000, 100) if quick else (2000, 100_000, 500)
    with contextlib.ExitStack() as stack:
        if pg_url is None:
            cluster = stack.enter_context(pg_cluster.cluster())
            install_postgres(cluster.admin_url, [pg_cluster.WRITER])
            pg_url = cluster.writer_url
        figures: dict[str, dict[str, float]] = {}
        for name, url in (("sqlite", None), ("postgresql", pg_url)):
            where = root / name
            where.mkdir()
            figures[name] = {
                "single appends / s": bench_single(where, n_single, url),
                f"batched events / s (batches of 1,000, {n_batched:,})": bench_batched(where, n_batched, ledger=url),
                f"events / s, 4 writer processes x {n_conc}": bench_concurrent(where, key_dir, 4, n_conc, url),
            }
    rows = []
    for figure, lite in figures["sqlite"].items():
        pg = figures["postgresql"][figure]
        rows += [(f"{figure}, SQLite", lite, None, "higher"), (f"{figure}, PostgreSQL", pg, None, "higher")]
        rows.append(("  ratio PostgreSQL / SQLite", pg / lite, None, "higher"))
    return rows


def bench_all(root: Path, key_dir: str, q: bool) -> list[tuple]:
    rows = []
    single = bench_single(root, 300 if q else 2000)
    rows.append(("durable single appends / s", single, 400, "higher"))
    batched = bench_batched(root, 20_000 if q else 100_000)
    rows.append(("batched events / s", batched, 10_000, "higher"))
    conc = bench_concurrent(root, key_dir, 4, 200 if q else 500)
    rows.append(("events / s, 4 writer processes", conc, None, "higher"))
    n = 20_000 if q else 100_000
    big = build_big(root, n)
    report = verify_run(big)
    assert report.ok, report.problems
    rows.append((f"verify {n}-event ledger (s)", report.seconds, 10, "lower"))
    last = (big / "LAST").read_text()
    with RunDir.open(big) as run:
        times = []
        for _ in range(20):
            t = time.perf_counter()
            provenance(run.ledger, last, max_depth=10)
            times.append(time.perf_counter() - t)
        times.sort()
    rows.append((f"provenance query, depth 10, {n}-event ledger (ms, median)", times[10] * 1000, 10, "lower"))
    size = (128 if q else 1024) << 20
    copied, moved, plain = bench_artifact(root, size)
    rows.append((f"plain hashlib.sha256 on a {size >> 20} MiB file (MB/s)", plain / 1e6, None, "higher"))
    rows.append(("artifact put_file, copy + fsync (MB/s)", copied / 1e6, None, "higher"))
    rows.append(("  ratio copy / hashlib", copied / plain, 0.5, "higher"))
    rows.append(("artifact put_file(move=True), hand-over + fsync (MB/s)", moved / 1e6, None, "higher"))
    rows.append(("  ratio move / hashlib", moved / plain, 0.5, "higher"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", action="store_true", help="appends on SQLite and PostgreSQL, with ratios")
    ap.add_argument("--pg-url", default=None, help="PostgreSQL URL for --backends (default: a throwaway cluster)")
    ap.add_argument("--quick", action="store_true", help="smaller sizes (about a minute)")
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temp dir on the same disk as runs/)")
    args = ap.parse_args()
    q = args.quick
    root = Path(tempfile.mkdtemp(prefix="bench-", dir=args.dir))
    key_dir = str(root / "keys")
    os.environ["RSI_MASTER_KEY_DIR"] = key_dir
    rows = []
    try:
        rows = bench_backends(root, key_dir, q, args.pg_url) if args.backends else bench_all(root, key_dir, q)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"machine: {os.cpu_count()} cores")
    print("---")
    for name, value, target, better in rows:
        status = ""
        if target is not None:
            ok = value >= target if better == "higher" else value <= target
            status = f"  (target {'>=' if better == 'higher' else '<='} {target}: {'met' if ok else 'NOT met'})"
        print(f"{name}: {value:,.3f}{status}")


if __name__ == "__main__":
    main()
