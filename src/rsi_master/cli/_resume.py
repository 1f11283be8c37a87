"""`rsi-master resume RUN_DIR`: continue a killed run from its ledger alone."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..agents import check_endpoints, check_recorded, recorded_configs
from ..expos import ExpOS
from ..orchestra import make_display, resume_run
from ..rundir import is_run_dir
from ._commands import help_of
from ._common import apply_device, device_arg, executor_args, is_tty, key_dir_arg, ledger_arg
from ._report import report_for
from ._run import print_summary

NAME = "resume"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument("run_dir", metavar="RUN_DIR")
    device_arg(p)
    key_dir_arg(p)
    ledger_arg(p)
    executor_args(p)
    p.set_defaults(handler=run, resumable=True)


def run(args: argparse.Namespace) -> int:
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
    if not is_run_dir(Path(args.run_dir)):
        return  # resume_run says what is wrong with the directory

    with ExpOS.open(args.run_dir, key_dir=args.key_dir, writable=False) as expos:
        if not expos.own_events("agents.config"):
            return
        check_recorded(expos.reader)
        check_endpoints(recorded_configs(expos.reader))
