"""The `rsi-master` operator CLI: a thin argparse layer over the Python API.

Subcommand modules are imported here but must keep torch & co. out of their module
scope: `rsi-master --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sqlite3
import sys

from .. import __version__
from ..errors import RsiMasterError
from ._common import apply_artifacts, apply_ledger

__all__ = ["build_parser", "main"]

# One module per subcommand, each with add_parser(subparsers) and a handler.
COMMANDS = (
    "_demo",
    "_init",
    "_verify",
    "_log",
    "_checkpoint",
    "_audit",
    "_lineage",
    "_tasks",
    "_landscape",
    "_sim",
    "_pipeline",
    "_run",
    "_resume",
    "_report",
    "_serve",
    "_guide",
    "_bench",
    "_mcp",
    "_door",
    "_export",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rsi-master",
        description="Autonomous post-training you can trust: tamper-evident runs, guarded actions, audits.",
    )
    parser.add_argument("--version", action="version", version=f"rsi-master {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__package__}.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    command = None
    if "--" in argv:  # `rsi-master agent ... -- CMD ...`: what follows is the agent's command, not ours
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1 :]
    args = parser.parse_args(argv)
    if command is not None:
        if not getattr(args, "takes_command", False):
            parser.error("unrecognized arguments: -- " + " ".join(command))
        args.cmd = command
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        apply_ledger(args)
        apply_artifacts(args)
        return int(args.handler(args) or 0)
    except RsiMasterError as exc:
        print(f"rsi-master: error: {exc}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as exc:
        print(f"rsi-master: error: database unreadable: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        where = getattr(args, "dir", None) or getattr(args, "run_dir", None) or "RUN_DIR"
        more = f"; `rsi-master resume {where}` continues the run" if getattr(args, "resumable", False) else ""
        print(f"rsi-master: interrupted{more}", file=sys.stderr)
        return 130
