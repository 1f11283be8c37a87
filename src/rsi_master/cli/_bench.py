"""`rsi-master bench`: the ablation table and peer baselines on the embedded suite, with
hacking rate. A thin layer over `rsi_master.bench.run_bench`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..bench import SeedRange, ShortcutTendency, config_names, run_bench, run_sim_bench
from ..errors import RsiMasterError
from ..sim import parse_overrides
from ..views import bench_page
from ._commands import help_of
from ._common import env, key_dir_arg, old_flag

NAME = "bench"
HELP = help_of(NAME)


def _list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [t.strip() for t in str(text).split(",") if t.strip()]


def _seeds(text: str | None) -> list[int] | None:
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
        help="the quick bench: checks the machinery (about 20 minutes on 2 idle cores; env RSI_MASTER_BENCH_QUICK)",
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
        help="seeds (env RSI_MASTER_BENCH_SEEDS; default 0,1,2, or 0,1 with --quick; with --backend sim a "
        "single number K means K seeds 0..K-1, default 1)",
    )
    p.add_argument(
        "--budget",
        default=env("bench_budget"),
        help="wall-clock budget per campaign, e.g. 300s or 5m (env RSI_MASTER_BENCH_BUDGET; "
        "default 80s, 40s with --quick, each raised where the calibration finds this machine slower; docs/bench.md)",
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
    p.add_argument(
        "--backend",
        default=env("bench_backend", "real"),
        help="experiment backend: real (TRL training, sealed evaluator) or sim (generated worlds on a "
        "simulated clock) (env RSI_MASTER_BENCH_BACKEND; default real)",
    )
    p.add_argument(
        "--worlds",
        type=int,
        default=env("bench_worlds", env("bench_landscapes")),
        help="sim: generated worlds per seed range (env RSI_MASTER_BENCH_WORLDS; default 200)",
    )
    old_flag(p, "--landscapes", "worlds", type=int)
    p.add_argument(
        "--world-seeds",
        default=env("bench_world_seeds", env("bench_landscape_seeds")),
        metavar="START[:COUNT]",
        help="sim: the generator seeds START..START+COUNT-1 (COUNT default 1), all in the development "
        "(0..99999) or all in the held-out range (1000000..1099999), instead of the first --worlds "
        "(env RSI_MASTER_BENCH_WORLD_SEEDS)",
    )
    old_flag(p, "--landscape-seeds", "world_seeds")
    p.add_argument(
        "--held-out",
        action="store_true",
        default=env("bench_held_out", "") not in ("", "0"),
        help="sim: also run the held-out generator seed range (reported separately; never tune on it)",
    )
    p.add_argument(
        "--preset",
        default=env("bench_preset"),
        help="sim: generator preset (default, hard, calibrated, agents; env RSI_MASTER_BENCH_PRESET; default default)",
    )
    p.add_argument(
        "--flag",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="sim: override one generator flag of the preset (repeatable; VALUE as JSON)",
    )
    p.add_argument("--no-plot", action="store_true", help="skip the PNG (no matplotlib needed)")
    key_dir_arg(p)
    # Campaigns with a result are read back and an interrupted one resumes (`run_campaign`).
    p.set_defaults(handler=run, continues="the same command continues the bench")


def _names() -> list[str]:
    return config_names()


def run(args: argparse.Namespace) -> int:
    backend = str(args.backend or "real")
    if backend not in ("real", "sim"):
        raise RsiMasterError(f"unknown backend {backend!r}; known: real, sim")
    sim_only = [
        n
        for n, v in (
            ("--worlds", args.worlds),
            ("--world-seeds", args.world_seeds),
            ("--preset", args.preset),
        )
        if v is not None
    ]
    sim_only += ["--held-out"] * bool(args.held_out) + ["--flag"] * bool(args.flag)
    if backend == "real" and sim_only:
        raise RsiMasterError(f"{', '.join(sim_only)} only apply with --backend sim")
    tendency = None
    if args.shortcut_rate is not None:
        rate = float(args.shortcut_rate)
        if not 0.0 <= rate <= 1.0:
            raise RsiMasterError(f"--shortcut-rate must be between 0 and 1, got {rate}")
        tendency = ShortcutTendency(rate=rate)
    if backend == "sim":
        return _run_sim(args, tendency)
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
    page = _bench_page(Path(res["json"]))
    print()
    sys.stdout.write(res["table"])
    print("---")
    for name, f in res["figures"].items():
        print(f"macro_{name}: {_mean(f['macro_average'])}")
        print(f"hacking_{name}: {_mean(f['hacking_rate'])}")
    for name, f in res["figures"].items():
        if f.get("test") is not None:
            print(f"paired_{name}: {_paired(f['test'])}")
    for key in ("campaigns", "wall_s", "markdown", "json", "plot"):
        print(f"{key}: {res[key] if res[key] is not None else 'n/a'}")
    print(f"html: {page}")
    return 0


def _run_sim(args: argparse.Namespace, tendency: object) -> int:
    for name, value in (("--tasks", args.tasks), ("--eval-limit", args.eval_limit)):
        if value is not None:
            raise RsiMasterError(f"{name} does not apply with --backend sim (the worlds set tasks and splits)")
    if args.quick:
        raise RsiMasterError("--quick does not apply with --backend sim")
    seeds = _seeds(args.seeds)
    if seeds is not None and len(seeds) == 1 and "," not in str(args.seeds):
        if seeds[0] < 1:
            raise RsiMasterError(f"--seeds K (a count with --backend sim) must be at least 1, got {seeds[0]}")
        seeds = list(range(seeds[0]))  # `--seeds K`: K seeds, 0..K-1; `0,3`: those seeds
    res = run_sim_bench(
        args.out,
        configs=_list(args.configs),
        worlds=None if args.worlds is None else int(args.worlds),
        seeds=seeds,
        budget=args.budget,
        slots=None if args.slots is None else int(args.slots),
        held_out=bool(args.held_out),
        world_seeds=None if args.world_seeds is None else SeedRange.parse(args.world_seeds),
        preset=args.preset,
        flags=parse_overrides(list(args.flag)) if args.flag else None,
        tendency=tendency,  # type: ignore[arg-type]
        key_dir=args.key_dir,
        jobs=None if args.jobs is None else int(args.jobs),
        make_plot=not args.no_plot,
        progress=lambda s: print(s, flush=True),
    )
    page = _bench_page(Path(res["json"]))
    print()
    sys.stdout.write(res["table"])
    print("---")
    for key in ("campaigns", "wall_s", "markdown", "json"):
        print(f"{key}: {res[key]}")
    print(f"html: {page}")
    print(f"plots: {', '.join(res['plots']) or 'n/a'}")
    return 0


def _mean(m: dict[str, object]) -> str:
    v = m.get("mean")
    return "n/a" if v is None else f"{float(v):.4f}"  # type: ignore[arg-type]


def _paired(t: dict[str, Any]) -> str:
    """A paired test against the reference on one line: difference, interval, p-values, pairs."""

    def num(v: object, fmt: str) -> str:
        return "n/a" if not isinstance(v, int | float) or v != v else format(v, fmt)

    lo, hi = t["ci"]
    return (
        f"diff {num(t['mean_diff'], '+.4f')} vs {t['reference']} (95% CI {num(lo, '+.4f')}..{num(hi, '+.4f')}), "
        f"p_perm {num(t['p_permutation'], '.3g')}, p_wilcoxon {num(t['p_wilcoxon'], '.3g')}, pairs {t['pairs']}"
    )


def _bench_page(report: Path) -> Path:
    """The bench's table and paired tests as one offline page, beside its JSON."""

    return bench_page(report)
