"""A simulated campaign with its artifacts in the run directory, on a shared path (`file://`) and
on an S3 API server (moto on loopback, through s3fs), in one process one after the other, so the
ratios compare like with like (after a first, uncounted campaign that pays the imports): the
run's wall time, the stored objects, and a fresh `verify` (every shared blob read again).

    .venv/bin/python benchmarks/bench_shared_store.py [--budget 30m] [--slots 2]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

from rsi_master.cli._main import main
from rsi_master.rundir import RunDir
from rsi_master.sim import generate_world, save_world


def _quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return main(argv)


def campaign(tmp: Path, land: Path, name: str, artifacts: str | None, budget: str, slots: str) -> dict[str, float]:
    run = tmp / name
    args = [
        "run",
        "--backend",
        "sim",
        "--world",
        str(land),
        "--budget",
        budget,
        "--slots",
        slots,
        "--dir",
        str(run),
    ]
    start = time.perf_counter()
    assert _quiet(args + (["--artifacts", artifacts] if artifacts else [])) == 0
    wall = time.perf_counter() - start
    with RunDir.open(run) as opened:
        objects = len(list(opened.store.digests()))
    start = time.perf_counter()
    assert _quiet(["verify", str(run)]) == 0
    return {"run_s": wall, "objects": objects, "verify_s": time.perf_counter() - start}


def bench() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", default="30m")
    parser.add_argument("--slots", default="2")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests import s3_server

    with tempfile.TemporaryDirectory(prefix="bench-shared-") as name, s3_server.server() as endpoint:
        tmp = Path(name)
        os.environ["RSI_MASTER_KEY_DIR"] = str(tmp / "keys")
        land = save_world(generate_world(4), tmp / "world.json")
        os.environ.update({**s3_server.ENV, "AWS_ENDPOINT_URL": endpoint})
        campaign(tmp, land, "warm-up", None, args.budget, args.slots)  # imports and caches, not counted
        rows = {
            "local directory": campaign(tmp, land, "local", None, args.budget, args.slots),
            "shared path (file://)": campaign(tmp, land, "file", f"file://{tmp}/shared", args.budget, args.slots),
            "S3 API (moto, s3fs)": campaign(tmp, land, "s3", "s3://rsi-bench/runs", args.budget, args.slots),
        }
    base = rows["local directory"]["run_s"]
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print("| artifacts | run wall s | ratio | objects | fresh verify s |")
    print("| --- | --- | --- | --- | --- |")
    for name, r in rows.items():
        print(f"| {name} | {r['run_s']:.1f} | {r['run_s'] / base:.2f} | {r['objects']:.0f} | {r['verify_s']:.2f} |")


if __name__ == "__main__":
    bench()
