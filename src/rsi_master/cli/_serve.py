"""`rsi-master serve PATH [--host 127.0.0.1] [--port 8765]`: the report and overview pages live."""

from __future__ import annotations

import argparse
import secrets
import socket
from pathlib import Path

from .._net import listen_tcp
from ..errors import NotARunError, RsiMasterError
from ..views import run_dirs
from ._commands import help_of
from ._common import env, key_dir_arg

NAME = "serve"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument("path", metavar="PATH", help="a run directory, or a directory of runs")
    p.add_argument("--host", default=env("serve_host", "127.0.0.1"), help="address (env RSI_MASTER_SERVE_HOST)")
    p.add_argument(
        "--port", type=int, default=env("serve_port", "8765"), help="port (env RSI_MASTER_SERVE_PORT; default 8765)"
    )
    p.add_argument(
        "--token",
        default=env("serve_token"),
        help="the token every request needs, on loopback too (env RSI_MASTER_SERVE_TOKEN; at least 16 "
        "characters; default: a fresh one, printed in the URL)",
    )
    key_dir_arg(p)
    p.set_defaults(handler=run)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a port in use is one clear line."""
    sock = listen_tcp(host, port)
    sock.listen(64)
    return sock


def run(args: argparse.Namespace) -> int:
    try:
        from ..views.live import LiveRuns, is_loopback, make_app, make_server
    except ImportError:
        raise RsiMasterError("rsi-master serve needs the serve extra: pip install 'rsi-master[serve]'") from None

    root = Path(args.path)
    waiting = False
    try:
        run_dirs([str(root)])  # an unknown path or a file is one clear line, before anything listens
    except NotARunError:
        if not root.is_dir():
            raise
        waiting = True  # a directory of runs to come: its list fills as they appear
    loopback = is_loopback(args.host)
    token = args.token or secrets.token_urlsafe(24)
    if len(token) < 16:
        raise RsiMasterError(f"--token: at least 16 characters, not {len(token)}")
    sock = bind(args.host, args.port)
    port = sock.getsockname()[1]  # the port bound (--port 0 picks a free one)
    runs = LiveRuns(root, args.key_dir)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"serving {root} at http://{shown}:{port}/?token={token}", flush=True)
    if waiting:
        print(f"no run in {root} yet: the list of runs fills as runs appear", flush=True)
    server = make_server(runs, make_app(runs, token=token, loopback=loopback))
    try:
        server.run(sockets=[sock])
    finally:
        runs.close()
        sock.close()
    return 0
