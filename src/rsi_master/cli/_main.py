"""The `rsi-master` operator CLI: a thin argparse layer over the Python API.

Each command's module is imported only when that command runs (`COMMANDS` names them), so
`rsi-master --help` reads one table and a command loads what it runs, nothing of the others.
"""

from __future__ import annotations

import argparse
import importlib
import sqlite3
import sys

from .. import __version__
from ..errors import RsiMasterError
from ._commands import COMMANDS
from ._common import apply_artifacts, apply_ledger

__all__ = ["build_parser", "main"]


def build_parser(command: str | None = None, *, lazy: bool = False) -> argparse.ArgumentParser:
    """The `rsi-master` parser with every command's options, or (`lazy`) with only `command`'s
    module imported and every other command a name and its line of help."""
    parser = argparse.ArgumentParser(
        prog="rsi-master",
        description="Autonomous post-training you can trust: tamper-evident runs, guarded actions, audits.",
    )
    parser.add_argument("--version", action="version", version=f"rsi-master {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = COMMANDS[command].module if command in COMMANDS else None
    loaded: set[str] = set()
    for name, (module, help_line) in COMMANDS.items():
        if module in loaded:  # registered with an earlier command of its module
            continue
        if lazy and module != wanted:
            sub.add_parser(name, help=help_line, add_help=False)
            continue
        importlib.import_module(f"{__package__}.{module}").add_parser(sub)
        loaded.add(module)
    return parser


def _command_of(argv: list[str]) -> str | None:
    # The top-level parser has flags only (--help, --version): its first word names the command.
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = None
    if "--" in argv:  # `rsi-master agent ... -- CMD ...`: what follows is the agent's command, not ours
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1 :]
    parser = build_parser(_command_of(argv), lazy=True)
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
        more = ""
        if getattr(args, "continues", None):
            more = f"; {args.continues}"
        elif getattr(args, "resumable", False):
            more = f"; `rsi-master resume {where}` continues the run"
        print(f"rsi-master: interrupted{more}", file=sys.stderr)
        return 130
