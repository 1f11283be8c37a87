"""`rsi-master mcp`: serve one role's ExpOS tools of one run, as one identity, over MCP."""

from __future__ import annotations

import argparse
import os

from ._common import env, key_dir_arg

NAME = "mcp"
HELP = "serve a role's ExpOS tools of a run over the Model Context Protocol (stdio, or HTTP on loopback)"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP + ". Every call is checked against the run's contract and "
                       "recorded in its ledger under --role and --id. See docs/external-agents.md.")
    p.add_argument("run_dir", metavar="RUN_DIR", nargs="?", default=env("mcp_run", os.environ.get("EXPOS_RUN")),
                   help="the run (env RSI_MASTER_MCP_RUN or EXPOS_RUN)")
    p.add_argument("--role", default=env("mcp_role", os.environ.get("EXPOS_ROLE", "worker")),
                   help="caller role: worker, reviewer, main or public (env RSI_MASTER_MCP_ROLE; default worker)")
    p.add_argument("--id", default=env("mcp_id", os.environ.get("EXPOS_ID")), required=False,
                   help="caller identity in the run, e.g. a Worker id (env RSI_MASTER_MCP_ID or EXPOS_ID)")
    p.add_argument("--transport", choices=("stdio", "http"), default=env("mcp_transport", "stdio"),
                   help="stdio (default), or streamable HTTP on loopback (env RSI_MASTER_MCP_TRANSPORT)")
    p.add_argument("--host", default=env("mcp_host", "127.0.0.1"),
                   help="HTTP: loopback address to bind (env RSI_MASTER_MCP_HOST; default 127.0.0.1)")
    p.add_argument("--port", type=int, default=env("mcp_port", "8765"),
                   help="HTTP: port, 0 for any free one (env RSI_MASTER_MCP_PORT; default 8765)")
    p.add_argument("--progress-every", type=float, default=env("mcp_progress_every", "5"), metavar="SECONDS",
                   help="how often a running call reports progress to a client that asked for it (env "
                        "RSI_MASTER_MCP_PROGRESS_EVERY; default 5)")
    key_dir_arg(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import RsiMasterError
    from ..mcp_server import serve

    if not args.run_dir:
        raise RsiMasterError("mcp: no run directory (give RUN_DIR, or set RSI_MASTER_MCP_RUN or EXPOS_RUN)")
    if not args.id:
        raise RsiMasterError("mcp: no caller identity (give --id, e.g. the Worker id the run knows this agent by)")
    serve(args.run_dir, args.role, args.id, transport=args.transport, host=args.host, port=args.port,
          key_dir=args.key_dir, progress_every=args.progress_every)
    return 0
