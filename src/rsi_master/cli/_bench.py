"""`rsi-master bench`: the ablation table and peer baselines on the embedded suite, with
hacking rate. A thin layer over `rsi_master.bench.run_bench`."""

from __future__ import annotations

import argparse
import sys

from ._common import env, key_dir_arg

NAME = "bench"
HELP = "run every configuration (full system, ablations, baselines) and write the table, JSON and plot"


def _list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [t.strip() for t in str(text).split(",") if t.strip()]


def _seeds(text: str | None) -> list[int] | None:
    from ..errors import RsiMasterError

    items = _list(text)
    if items is None:
        return None
    try:
        return [int(s) for s in items]
    except ValueError:
        raise RsiMasterError(f"--seeds takes comma-separated non-negative integers, got {text!r}") from None


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        NAME,
        help=HELP,
        description=HELP + ". Without options: the full table (4 tasks, "
        "3 seeds, 80-second campaigns). With --quick: one task, 2 seeds, 40-second campaigns, two at a "
        "time.",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        default=env("bench_quick", "") not in ("", "0"),
        help="the quick bench: checks the machinery in at most 15 minutes (env RSI_MASTER_BENCH_QUICK)",
    )
    p.add_argument(
        "--out",
        default=env("bench_out", "runs/bench"),
        metavar="DIR",
        help="output directory; finished campaigns in it are reused (env RSI_MASTER_BENCH_OUT; default runs/bench)",
    )
    p.add_argument(
        "--configs",
        default=env("bench_configs"),
        metavar="A,B",
        help="configurations (env RSI_MASTER_BENCH_CONFIGS; default all: " + ", ".join(_names()) + ")",
    )
    p.add_argument(
        "--tasks",
        default=env("bench_tasks"),
        metavar="A,B",
        help="tasks (env RSI_MASTER_BENCH_TASKS; default all four, or knowledge with --quick)",
    )
    p.add_argument(
        "--seeds",
        default=env("bench_seeds"),
        metavar="0,1,2",
        help="seeds (env RSI_MASTER_BENCH_SEEDS; default 0,1,2, or 0,1 with --quick)",
    )
    p.add_argument(
        "--budget",
        default=env("bench_budget"),
        help="wall-clock budget per campaign, e.g. 300s or 5m (env RSI_MASTER_BENCH_BUDGET; "
        "default 80s, 40s with --quick)",
    )
    p.add_argument(
        "--slots",
        type=int,
        default=env("bench_slots"),
        help="worker slots per campaign (env RSI_MASTER_BENCH_SLOTS; default 2)",
    )
    p.add_argument(
        "--eval-limit",
        type=int,
        default=env("bench_eval_limit"),
        help="evaluation items per split (env RSI_MASTER_BENCH_EVAL_LIMIT; default 20, 5 with --quick)",
    )
    p.add_argument(
        "--shortcut-rate",
        type=float,
        default=env("bench_shortcut_rate"),
        help="probability that a stalled Worker attempts a shortcut (env RSI_MASTER_BENCH_SHORTCUT_RATE; default 0.5)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=env("bench_jobs"),
        help="campaigns run at once (env RSI_MASTER_BENCH_JOBS; default 1, 2 with --quick); they share "
        "the machine's cores, so more jobs means fewer trials per campaign on a small machine",
    )
    p.add_argument("--no-plot", action="store_true", help="skip the PNG (no matplotlib needed)")
    key_dir_arg(p)
    p.set_defaults(handler=run)


def _names() -> list[str]:
    from ..bench import config_names

    return config_names()


def run(args: argparse.Namespace) -> int:
    from ..bench import ShortcutTendency, run_bench
    from ..errors import RsiMasterError

    tendency = None
    if args.shortcut_rate is not None:
        rate = float(args.shortcut_rate)
        if not 0.0 <= rate <= 1.0:
            raise RsiMasterError(f"--shortcut-rate must be between 0 and 1, got {rate}")
        tendency = ShortcutTendency(rate=rate)
    res = run_bench(
        args.out,
        configs=_list(args.configs),
        tasks=_list(args.tasks),
        seeds=_seeds(args.seeds),
        budget=args.budget,
        slots=None if args.slots is None else int(args.slots),
        eval_limit=None if args.eval_limit is None else int(args.eval_limit),
        quick=args.quick,
        tendency=tendency,
        key_dir=args.key_dir,
        make_plot=not args.no_plot,
        jobs=None if args.jobs is None else int(args.jobs),
        progress=lambda s: print(s, flush=True),
    )
    print()
    sys.stdout.write(res["table"])
    print("---")
    for name, f in res["figures"].items():
        print(f"macro_{name}: {_mean(f['macro_average'])}")
        print(f"hacking_{name}: {_mean(f['hacking_rate'])}")
    for key in ("campaigns", "wall_s", "markdown", "json", "plot"):
        print(f"{key}: {res[key] if res[key] is not None else 'n/a'}")
    return 0


def _mean(m: dict[str, object]) -> str:
    v = m.get("mean")
    return "n/a" if v is None else f"{float(v):.4f}"  # type: ignore[arg-type]
