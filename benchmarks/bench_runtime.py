"""Runtime benchmark: one default SFT experiment and one 200-sample evaluation, as a user runs them.

    .venv/bin/python benchmarks/bench_runtime.py [--task arithmetic --family scratchpad]

Each measured command runs as its own process (the `rsi-master` console script), so wall
time includes interpreter start and the torch/transformers/TRL imports; peak memory is
the child's maximum resident set size from `wait4` (the evaluator's own subprocess
included, since the CLI waits for it). Data generation is done first and not timed: it
is a separate operation. Figures go to docs/benchmarks.md (## Runtime).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stdout) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {shlex.join(cmd)}\n{out}")
    return wall, usage.ru_maxrss / 1024, out


def summary_value(out: str, key: str) -> str:
    for line in out.splitlines():
        if line.startswith(f"{key}: "):
            return line.split(": ", 1)[1]
    return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="arithmetic")
    parser.add_argument("--family", default="scratchpad")
    parser.add_argument("--n", type=int, default=5000, help="examples in the default experiment")
    parser.add_argument("--split", default="dev")
    parser.add_argument(
        "--eval-only",
        metavar="CHECKPOINT",
        default=None,
        help="skip training; time only the evaluation of this checkpoint",
    )
    args = parser.parse_args()
    # The installed console script: exactly what a user types.
    cli = [str(Path(sys.executable).with_name("rsi-master"))]
    if args.eval_only:
        eval_cmd = [*cli, "eval", "--checkpoint", args.eval_only, "--task", args.task, "--split", args.split]
        eval_wall, eval_rss, eval_out = timed(eval_cmd)
        print(f"eval command:  rsi-master {shlex.join(eval_cmd[1:])}")
        print("---")
        print(f"task: {args.task}")
        print(f"eval_samples: {summary_value(eval_out, 'samples')}")
        print(f"eval_wall_s: {eval_wall:.1f}")
        print(f"eval_in_process_s: {summary_value(eval_out, 'eval_seconds')}")
        print(f"eval_peak_rss_mib: {eval_rss:.0f}")
        print(f"load_average_1m: {os.getloadavg()[0]:.1f}")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-runtime-") as tmp:
        data = Path(tmp) / "data.jsonl"
        subprocess.run(
            [
                *cli,
                "data",
                "generate",
                "--task",
                args.task,
                "--family",
                args.family,
                "--n",
                str(args.n),
                "--out",
                str(data),
            ],
            check=True,
            capture_output=True,
        )
        train_cmd = [*cli, "train", "--data", str(data), "--out", str(Path(tmp) / "run"), "--method", "sft"]
        train_wall, train_rss, train_out = timed(train_cmd)
        ckpt = Path(tmp) / "run" / "checkpoint"
        eval_cmd = [*cli, "eval", "--checkpoint", str(ckpt), "--task", args.task, "--split", args.split]
        eval_wall, eval_rss, eval_out = timed(eval_cmd)
    print(f"train command: rsi-master {shlex.join(train_cmd[1:])}")
    print(f"eval command:  rsi-master {shlex.join(eval_cmd[1:])}")
    print("---")
    print(f"task: {args.task}/{args.family}")
    print(f"sft_examples: {args.n}")
    print(f"sft_steps: {summary_value(train_out, 'steps')}")
    print(f"sft_wall_s: {train_wall:.1f}")
    print(f"sft_train_loop_s: {summary_value(train_out, 'train_seconds')}")
    print(f"sft_peak_rss_mib: {train_rss:.0f}")
    print(f"eval_samples: {summary_value(eval_out, 'samples')}")
    print(f"eval_wall_s: {eval_wall:.1f}")
    print(f"eval_in_process_s: {summary_value(eval_out, 'eval_seconds')}")
    print(f"eval_peak_rss_mib: {eval_rss:.0f}")
    print(f"eval_score: {summary_value(eval_out, 'score')}")
    print(f"load_average_1m: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
