"""`rsi-master mcp`: serve one caller's ExpOS tools of one run over MCP, as its capability names it."""

from __future__ import annotations

import argparse
import os

from ..errors import RsiMasterError
from ..expos import INLINE_REFUSED, read_capability
from ..mcp_server import serve
from ._commands import help_of
from ._common import env, key_dir_arg

NAME = "mcp"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        NAME,
        help=HELP,
        description=HELP + ". The caller (role and node id) is the capability the "
        "harness issued; every call is checked against the run's contract and recorded in its ledger. "
        "An agent's server goes through the harness's door (--door); the operator may open the run "
        "directly (RUN_DIR, with the key directory). See docs/external-agents.md.",
    )
    p.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        nargs="?",
        default=env("mcp_run", os.environ.get("EXPOS_RUN")),
        help="operator only: the run, opened in this process (env RSI_MASTER_MCP_RUN or EXPOS_RUN)",
    )
    p.add_argument(
        "--door",
        default=env("mcp_door", os.environ.get("EXPOS_DOOR")),
        metavar="SOCKET",
        help="the harness's door (Unix socket) to call through (env RSI_MASTER_MCP_DOOR or EXPOS_DOOR)",
    )
    # Kept only to answer it with a clear error: a token in argv is readable by every process.
    p.add_argument("--capability", default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--capability-file",
        default=env("capability_file", os.environ.get("EXPOS_CAPABILITY_FILE")),
        metavar="FILE",
        help="the capability the harness issued to this caller, read from FILE, or from standard input with - "
        "(HTTP transport only; env RSI_MASTER_CAPABILITY_FILE or EXPOS_CAPABILITY_FILE; or an inherited "
        "descriptor: EXPOS_CAPABILITY_FD)",
    )
    # Declared roles are gone: kept only to answer them with a clear error.
    p.add_argument("--role", default=None, help=argparse.SUPPRESS)
    p.add_argument("--id", default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default=env("mcp_transport", "stdio"),
        help="stdio (default), or streamable HTTP on loopback (env RSI_MASTER_MCP_TRANSPORT)",
    )
    p.add_argument(
        "--host",
        default=env("mcp_host", "127.0.0.1"),
        help="HTTP: loopback address to bind (env RSI_MASTER_MCP_HOST; default 127.0.0.1)",
    )
    p.add_argument(
        "--port",
        type=int,
        default=env("mcp_port", "8765"),
        help="HTTP: port, 0 for any free one (env RSI_MASTER_MCP_PORT; default 8765)",
    )
    p.add_argument(
        "--progress-every",
        type=float,
        default=env("mcp_progress_every", "5"),
        metavar="SECONDS",
        help="how often a running call reports progress to a client that asked for it (env "
        "RSI_MASTER_MCP_PROGRESS_EVERY; default 5)",
    )
    key_dir_arg(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import sys

    if args.capability is not None or os.environ.get("EXPOS_CAPABILITY") or env("capability"):
        raise RsiMasterError(f"mcp: {INLINE_REFUSED}")
    if args.role is not None or args.id is not None:
        raise RsiMasterError(
            "mcp: --role and --id are not taken: the caller is the capability the harness issued "
            "(--capability-file; `rsi-master capability RUN_DIR --role R --id ID -o FILE` for an operator)"
        )

    if args.capability_file == "-" and args.transport == "stdio":
        raise RsiMasterError("mcp: --capability-file - reads standard input, which the stdio transport speaks MCP on")
    stdin = sys.stdin.readline() if args.capability_file == "-" else None
    args.capability = read_capability(args.capability_file, fd=os.environ.get("EXPOS_CAPABILITY_FD"), stdin=stdin)
    if not args.capability:
        raise RsiMasterError("mcp: no capability (give --capability-file FILE or set EXPOS_CAPABILITY_FILE)")
    if args.door and args.run_dir:
        raise RsiMasterError("mcp: give --door (an agent's server) or RUN_DIR (the operator's), not both")
    if not args.door and not args.run_dir:
        raise RsiMasterError("mcp: no door and no run (give --door SOCKET, or RUN_DIR as the operator)")
    serve(
        args.capability,
        run_dir=args.run_dir or None,
        door=args.door or None,
        transport=args.transport,
        host=args.host,
        port=args.port,
        key_dir=args.key_dir,
        progress_every=args.progress_every,
    )
    return 0
