"""`rsi-master resume RUN_DIR`: continue a killed run from its ledger alone."""

from __future__ import annotations

import argparse

from ._common import apply_device, device_arg, executor_args, is_tty, key_dir_arg, ledger_arg

NAME = "resume"
HELP = "continue a run of `rsi-master run` after it was stopped or killed"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument("run_dir", metavar="RUN_DIR")
    device_arg(p)
    key_dir_arg(p)
    ledger_arg(p)
    executor_args(p)
    p.set_defaults(handler=run, resumable=True)


def run(args: argparse.Namespace) -> int:
    from ..orchestra import make_display, resume_run
    from ._report import report_for
    from ._run import print_summary

    _check_agents(args)
    apply_device(args)
    summary = resume_run(
        args.run_dir,
        key_dir=args.key_dir,
        display=make_display(is_tty()),
        executor=args.executor,
        ray_address=args.ray_address,
        sim_speed=args.sim_speed,
    )
    summary["report"] = report_for(args.run_dir, args.key_dir)
    return print_summary(summary)


def _check_agents(args: argparse.Namespace) -> None:
    """A run with LLM agents resumes only where their endpoints and keys are set (checked
    before anything is written, like `run`)."""
    from pathlib import Path

    from ..rundir import is_run_dir

    if not is_run_dir(Path(args.run_dir)):
        return  # resume_run says what is wrong with the directory
    from ..expos import ExpOS

    with ExpOS.open(args.run_dir, key_dir=args.key_dir, writable=False) as expos:
        if not expos.own_events("agents.config"):
            return
        from ..agents import check_endpoints, check_recorded, recorded_configs

        check_recorded(expos)
        check_endpoints(recorded_configs(expos))
