"""Helpers shared by subcommands: environment defaults and output."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..errors import RsiMasterError

__all__ = ["ENV_PREFIX", "apply_device", "device_arg", "env", "is_tty", "key_dir_arg", "old_flag"]

ENV_PREFIX = "RSI_MASTER_"


def env(name: str, default: Any = None) -> Any:
    """Default for a flag from `RSI_MASTER_<NAME>`, so every flag can be set from the environment."""
    return os.environ.get(ENV_PREFIX + name.upper().replace("-", "_"), default)


def old_flag(parser: argparse._ActionsContainer, flag: str, dest: str, **kw: Any) -> None:
    """A flag's earlier name, still read (scripts and notes use it) and not shown in `--help`."""
    parser.add_argument(flag, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kw)


def is_tty() -> bool:
    return sys.stdout.isatty()


def key_dir_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--key-dir",
        default=env("key_dir"),
        metavar="DIR",
        help="operator key directory holding signing keys and witnesses, outside any run directory "
        "(env RSI_MASTER_KEY_DIR; default ~/.config/rsi-master/keys)",
    )


def ledger_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ledger",
        default=env("ledger"),
        metavar="URL",
        help="keep the run's ledger in PostgreSQL at this postgresql:// URL instead of SQLite in the run "
        "directory; for an existing PostgreSQL run, the URL to reach it by (env RSI_MASTER_LEDGER; "
        "password from PGPASSWORD or ~/.pgpass)",
    )


def apply_ledger(args: argparse.Namespace) -> None:
    """Make --ledger the process's (and its children's) ledger location (see rundir.LEDGER_ENV)."""
    url = getattr(args, "ledger", None)
    if url:
        from ..ledger import is_ledger_url

        if not is_ledger_url(url):
            raise RsiMasterError(f"--ledger {url!r}: not a postgresql:// URL")
        os.environ[ENV_PREFIX + "LEDGER"] = url


def artifacts_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--artifacts",
        default=env("artifacts"),
        metavar="URL",
        help="keep the run's artifacts on shared storage at this fsspec URL (s3://BUCKET/PREFIX with s3fs, "
        "file:///shared/store, or a path), each run under its own run id, instead of in the run directory; "
        "recorded in the run, so resume, verify and export find it (env RSI_MASTER_ARTIFACTS; S3 endpoint "
        "and keys from the usual AWS_* variables)",
    )


def apply_artifacts(args: argparse.Namespace) -> None:
    """Check --artifacts before anything is written, and make it this process's choice for new runs."""
    url = getattr(args, "artifacts", None)
    if url:
        from ..artifacts import check_url

        os.environ[ENV_PREFIX + "ARTIFACTS"] = check_url(url)


def device_arg(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default=None,
        help="where training and evaluation run: auto (CUDA when torch sees a GPU), cpu, or cuda (refused "
        "up front on a machine without one) (env RSI_MASTER_DEVICE; default auto)",
    )


def apply_device(args: argparse.Namespace) -> None:
    """`--device` into RSI_MASTER_DEVICE (what the slot and evaluator processes read), then the
    setting checked before anything is written."""
    from ..runtime import check_device

    if getattr(args, "device", None):
        os.environ[ENV_PREFIX + "DEVICE"] = args.device
    check_device()


def executor_args(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Where the Worker and Reviewer nodes run (docs/scale-out.md)."""
    parser.add_argument(
        "--executor",
        choices=("process", "inline", "ray"),
        default=env("executor"),
        help="where nodes run: process (slot processes on this machine), inline (threads of this process, "
        "the simulated backend's), ray (Ray tasks on a cluster) (env RSI_MASTER_EXECUTOR; default the "
        "backend's: process for real, inline for sim)",
    )
    parser.add_argument(
        "--ray-address",
        default=env("ray_address"),
        metavar="ADDRESS",
        help="with --executor ray: the cluster to join, `auto` (the one `ray start` began on this machine) "
        "or ray://HOST:PORT (env RSI_MASTER_RAY_ADDRESS; default: a private Ray instance on this machine)",
    )
    parser.add_argument(
        "--sim-speed",
        type=float,
        default=env("sim_speed"),
        metavar="X",
        help="a simulated run on --executor ray: run its simulated clock X times faster than real time on "
        "the driver and every task, so simulated training takes time (env RSI_MASTER_SIM_SPEED; default: "
        "the real clock, simulated experiments taking no time)",
    )
