"""`rsi-master init`: create an ExpOS run directory from a task and a frozen contract."""

from __future__ import annotations

import argparse

from ..errors import RsiMasterError
from ..expos import Budget, ExpOS
from ..orchestra import resolve_task_ref
from ..runtime import resolve_model
from ._commands import help_of
from ._common import apply_device, device_arg, env, key_dir_arg

NAME = "init"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument(
        "--task",
        default=env("task"),
        required=env("task") is None,
        metavar="NAME_OR_DIR",
        help="a task of the embedded suite, or the path of a task directory (env RSI_MASTER_TASK)",
    )
    p.add_argument(
        "--dir", default=env("dir"), required=env("dir") is None, metavar="RUN_DIR", help="(env RSI_MASTER_DIR)"
    )
    p.add_argument(
        "--model",
        default=env("model"),
        metavar="PATH_OR_ID",
        help="base model every experiment trains from: a Hugging Face model directory, or a repository id in "
        "the local Hugging Face cache (never downloaded) (env RSI_MASTER_MODEL; default: the shipped model)",
    )
    p.add_argument(
        "--max-experiments", type=int, default=env("max_experiments", "64"), help="(env RSI_MASTER_MAX_EXPERIMENTS)"
    )
    p.add_argument(
        "--max-train-steps", type=int, default=env("max_train_steps", "400"), help="(env RSI_MASTER_MAX_TRAIN_STEPS)"
    )
    p.add_argument(
        "--eval-limit",
        type=int,
        default=env("eval_limit"),
        help="preregister only the first N samples of each split (quick runs) (env RSI_MASTER_EVAL_LIMIT)",
    )
    device_arg(p)
    key_dir_arg(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # Checked before ExpOS.create: bad input is one line, and no run directory or key is written.
    task = resolve_task_ref(args.task)  # a built-in name or a task directory, as `run` resolves it
    apply_device(args)
    if args.max_experiments < 1 or args.max_train_steps < 1:
        raise RsiMasterError("budgets must be positive")
    budget = Budget(max_experiments=args.max_experiments, max_train_steps=args.max_train_steps)
    limit = int(args.eval_limit) if args.eval_limit is not None else None
    model = resolve_model(args.model) if args.model else None  # a bad model: one line, nothing written
    with ExpOS.create(args.dir, task, budget=budget, eval_limit=limit, key_dir=args.key_dir, model=model) as expos:
        c = expos.contract
    print("---")
    print(f"run_dir: {args.dir}\ntask: {c.task}\nbase_model: {c.base_model_digest}")
    print(f"model: {c.base_model_source.spec if c.base_model_source is not None else 'shipped'}")
    print(f"evaluator: {c.evaluator.evaluator_digest}")
    print(f"samples: {', '.join(f'{k}={len(v)}' for k, v in c.evaluator.sample_ids.items())}")
    return 0
