"""`rsi-master run`: grow a research graph on a task under a wall-clock budget, return a
better, verified, audited checkpoint, and end with a greppable summary."""

from __future__ import annotations

import argparse

from ._common import env, is_tty, key_dir_arg

NAME = "run"
HELP = "post-train the base model on a task with Workers, Reviewers and a Main agent under a budget"

# The closing `key: value` lines, in order (scripts and agents parse them).
SUMMARY_KEYS = ("task", "final_score", "base_score", "reference_score", "selected", "selected_review_score",
                "hacking_rate", "blocked_attempts", "experiments", "workers", "reviews", "cross_worker_reviews",
                "decisions", "slot_utilisation", "budget_s", "spent_s", "summary_json", "run_dir")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    # knowledge: the task that moves above base within the default 5 minutes on a 2-core CPU.
    p.add_argument("--task", default=env("task", "knowledge"),
                   help="task of the embedded suite (env RSI_MASTER_TASK; default knowledge)")
    p.add_argument("--budget", default=env("budget", "5m"),
                   help="wall-clock budget: seconds or a duration such as 90s, 5m (env RSI_MASTER_BUDGET; default 5m)")
    p.add_argument("--slots", type=int, default=int(env("slots", 2)),
                   help="parallel Worker/Reviewer processes (env RSI_MASTER_SLOTS; default 2)")
    p.add_argument("--seed", type=int, default=int(env("seed", 0)), help="seed of the policies (env RSI_MASTER_SEED)")
    p.add_argument("--dir", default=env("dir"), metavar="RUN_DIR",
                   help="new run directory (env RSI_MASTER_DIR; default runs/<task>-<UTC time>)")
    p.add_argument("--eval-limit", type=int, default=int(env("eval_limit", 50)),
                   help="evaluation items per split (env RSI_MASTER_EVAL_LIMIT; default 50)")
    key_dir_arg(p)
    p.set_defaults(handler=run)


def print_summary(summary: dict[str, object]) -> None:
    print("---")
    for key in SUMMARY_KEYS:
        v = summary.get(key)
        if isinstance(v, float):
            v = f"{v:.4f}"
        print(f"{key}: {'n/a' if v is None else v}")


def run(args: argparse.Namespace) -> int:
    from ..orchestra import make_display, start_run

    summary = start_run(args.task, args.budget, slots=args.slots, seed=args.seed, run_dir=args.dir,
                        key_dir=args.key_dir, eval_limit=args.eval_limit, display=make_display(is_tty()))
    print_summary(summary)
    return 0
