"""The default run on every built-in task, idle or loaded, several seeds: the table in
docs/benchmarks.md ("Orchestration: default runs on each task").

    .venv/bin/python benchmarks/default_runs.py --mode idle   --out runs/default-idle
    .venv/bin/python benchmarks/default_runs.py --mode loaded --out runs/default-loaded
    .venv/bin/python benchmarks/default_runs.py --report runs/default-idle runs/default-loaded

`idle` runs one default `rsi-master run` at a time. `loaded` keeps two runs going at once:
two lanes take the runs longest first, and when one lane has no measured run left it runs
an unmeasured filler run until the other lane's last run ends, so that every measured run
has another run beside it for its whole length. Each run is followed by `verify` and
`audit`. The script prints one markdown row per run and writes every run's summary, with the
load average sampled during it, to OUT/results.json. `--report DIR...` prints the table of
those results again, with each task's median and range per mode.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

TASKS = ("knowledge", "arithmetic", "program_synthesis", "function_calling")
# the default budget each task declares (docs/tasks.md); only used to order the loaded lanes
BUDGET_S = {"function_calling": 600.0}
SUMMARY_KEYS = (
    "final_score",
    "base_score",
    "reference_score",
    "selected_review_score",
    "experiments",
    "workers",
    "reviews",
    "cross_worker_reviews",
    "blocked_attempts",
    "hacking_rate",
    "slot_utilisation",
    "budget_s",
    "spent_s",
)


class LoadSampler(threading.Thread):
    """Samples the 1-minute load average every 10 s until stopped."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(10.0):
            self.samples.append(float(Path("/proc/loadavg").read_text().split()[0]))

    def stop(self) -> list[float]:
        self._stop_event.set()
        self.join()
        return self.samples


def parse_summary(stdout: str) -> dict[str, str]:
    out: dict[str, str] = {}
    body = stdout.split("\n---\n", 1)[-1]
    for line in body.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key in SUMMARY_KEYS:
            out[key] = value.strip()
    return out


def one_run(cli: str, task: str, seed: int, run_dir: Path, log_dir: Path) -> dict[str, object]:
    sampler = LoadSampler()
    sampler.start()
    started = time.time()
    load_at_start = float(Path("/proc/loadavg").read_text().split()[0])
    cmd = [cli, "run", "--task", task, "--seed", str(seed), "--dir", str(run_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.time() - started
    samples = sampler.stop()
    (log_dir / f"{run_dir.name}.log").write_text(proc.stdout + proc.stderr)
    verify = subprocess.run([cli, "verify", str(run_dir)], capture_output=True, text=True)
    audit = subprocess.run([cli, "audit", str(run_dir)], capture_output=True, text=True)
    problems = [ln.split(":", 1)[1].strip() for ln in verify.stdout.splitlines() if ln.startswith("problems:")]
    flagged = [ln.split(":", 1)[1].strip() for ln in audit.stdout.splitlines() if ln.startswith("flagged:")]
    return {
        "task": task,
        "seed": seed,
        "run_dir": str(run_dir),
        "rc": proc.returncode,
        "wall_s": round(wall, 1),
        "load_at_start": load_at_start,
        "load_mean": round(sum(samples) / len(samples), 2) if samples else None,
        "summary": parse_summary(proc.stdout),
        "verify_rc": verify.returncode,
        "verify_problems": problems[0] if problems else "?",
        "audit_rc": audit.returncode,
        "audit_flagged": flagged[0] if flagged else "?",
        "error_tail": "" if proc.returncode == 0 else (proc.stderr or proc.stdout)[-400:],
    }


def row(r: dict[str, object], mode: str) -> str:
    s = r["summary"]
    assert isinstance(s, dict)

    def g(key: str) -> str:
        return str(s.get(key, "?"))

    util = g("slot_utilisation")
    util = f"{float(util):.3f}" if util not in ("?", "n/a") else util
    reviews = f"{g('reviews')} ({g('cross_worker_reviews')})"
    return (
        f"| {r['task']} | {mode} | {r['seed']} | **{g('final_score')} / {g('base_score')}** "
        f"| {g('selected_review_score')} | {util} | {g('workers')} | {g('experiments')} "
        f"| {reviews} | {g('blocked_attempts')} | {g('spent_s')} / {g('budget_s')} "
        f"| {r['load_mean']} | {r['verify_problems']} problems | {r['audit_flagged']} | {r['rc']} |"
    )


HEADER = (
    "| task | mode | seed | final / base | selected review | utilisation | workers | experiments "
    "| reviews (cross-Worker) | blocked | spent / budget s | load mean | verify | audit flagged | exit |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def report(dirs: list[Path]) -> int:
    """The table of earlier results (each DIR's results.json), then each task's median per mode."""
    print(HEADER)
    by: dict[tuple[str, str], list[float]] = {}
    reference: dict[str, str] = {}
    for d in dirs:
        mode = "loaded" if "loaded" in d.name else "idle"
        results = json.loads((d / "results.json").read_text())
        for r in sorted(results, key=lambda r: (TASKS.index(r["task"]) if r["task"] in TASKS else 9, r["seed"])):
            print(row(r, mode))
            reference.setdefault(r["task"], r["summary"].get("reference_score", "?"))
            final = r["summary"].get("final_score")
            if final not in (None, "n/a"):
                by.setdefault((r["task"], mode), []).append(float(final))
    print("\n| task | mode | runs | median final | range | reference |\n|---|---|---|---|---|---|")
    for (task, mode), finals in sorted(by.items(), key=lambda kv: (TASKS.index(kv[0][0]), kv[0][1])):
        finals.sort()
        median = finals[len(finals) // 2] if len(finals) % 2 else sum(finals[len(finals) // 2 - 1 :][:2]) / 2
        span = f"{finals[0]:.3f}-{finals[-1]:.3f}"
        print(f"| {task} | {mode} | {len(finals)} | {median:.3f} | {span} | {reference.get(task, '?')} |")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", type=Path, nargs="+", metavar="DIR", help="print the table of earlier results")
    ap.add_argument("--mode", choices=("idle", "loaded"))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--cli", default=str(Path(sys.executable).with_name("rsi-master")))
    args = ap.parse_args()
    if args.report:
        return report(args.report)
    if args.mode is None or args.out is None:
        ap.error("--mode and --out are needed to run (or --report DIR... to print results)")
    tasks = [t for t in args.tasks.split(",") if t]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    args.out.mkdir(parents=True, exist_ok=True)
    log_dir = args.out / "logs"
    log_dir.mkdir(exist_ok=True)
    jobs = [(t, s) for s in seeds for t in tasks]
    results: list[dict[str, object]] = []
    lock = threading.Lock()

    def record(res: dict[str, object]) -> None:
        with lock:
            results.append(res)
            print(row(res, args.mode), flush=True)
            (args.out / "results.json").write_text(json.dumps(results, indent=1))

    if args.mode == "idle":
        for t, s in jobs:
            record(one_run(args.cli, t, s, args.out / f"{t}-s{s}", log_dir))
        return 0

    queue = sorted(jobs, key=lambda j: -BUDGET_S.get(j[0], 300.0))
    remaining = {"lanes": 2}
    fillers: list[subprocess.Popen[bytes]] = []

    def lane(name: str) -> None:
        while True:
            with lock:
                job = queue.pop(0) if queue else None
            if job is None:
                break
            t, s = job
            record(one_run(args.cli, t, s, args.out / f"{t}-s{s}", log_dir))
        with lock:
            remaining["lanes"] -= 1
            other_busy = remaining["lanes"] > 0
        n = 0
        while other_busy:
            n += 1
            filler_dir = args.out / f"filler-{name}-{n}"
            proc = subprocess.Popen(
                [args.cli, "run", "--task", "knowledge", "--seed", "0", "--dir", str(filler_dir)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            with lock:
                fillers.append(proc)
            while proc.poll() is None:
                with lock:
                    other_busy = remaining["lanes"] > 0
                if not other_busy:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait()
                    break
                time.sleep(2.0)
            with lock:
                other_busy = remaining["lanes"] > 0

    threads = [threading.Thread(target=lane, args=(n,)) for n in ("a", "b")]
    for th in threads:
        th.start()
        time.sleep(1.0)
    for th in threads:
        th.join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
