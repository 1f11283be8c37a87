"""`rsi-master door | capability | agent`: the trust boundary between the harness and agents.

- `door RUN_DIR` serves the run's ExpOS on a Unix socket from this (harness-owned) process.
- `capability RUN_DIR --role R --id ID` issues a capability (needs the key directory).
- `agent RUN_DIR --role R --id ID -- CMD ...` starts an external agent (a coding agent, an
  MCP client, a script) behind the boundary: the harness issues the agent's capability,
  serves the door, and runs CMD as a separate OS user that can reach the door's socket and
  nothing of the run: run directory and key directory are made the harness's alone (0700).
  Without root there is no second user to drop to: CMD then runs as this user, which could
  read the key directory; the command says so and the guarantees rest on detection.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ._common import apply_device, device_arg, env, key_dir_arg

__all__ = ["AGENT_USER", "add_parser"]

# The OS user external agents run as when the harness is root (created on first use).
AGENT_USER = "rsi-agent"


def _parse_ttl(text: str) -> float:
    from ..errors import RsiMasterError

    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    t = str(text).strip().lower()
    try:
        value = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError:
        raise RsiMasterError(f"--ttl {text!r}: give seconds or a number with s, m, h or d (e.g. 8h)") from None
    if not value > 0:
        raise RsiMasterError(f"--ttl {text!r}: must be positive")
    return value


def add_parser(sub: argparse._SubParsersAction) -> None:
    h = "serve a run's ExpOS tools on a Unix socket (the door agents reach the run through)"
    p = sub.add_parser("door", help=h, description=h + ". Calls need a capability (`rsi-master capability`).")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument(
        "--socket",
        default=env("door_socket"),
        metavar="PATH",
        help="socket path (env RSI_MASTER_DOOR_SOCKET; default /run/rsi-master/RUN_ID.sock as root)",
    )
    device_arg(p)
    key_dir_arg(p)
    p.set_defaults(handler=_door)

    h = "issue a capability (role, node id, expiry) for a run; prints the token"
    p = sub.add_parser("capability", help=h, description=h + ". Needs the operator key directory.")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--role", required=True, choices=("worker", "reviewer", "main", "public"))
    p.add_argument("--id", required=True, help="the node id the capability acts as (the ledger's actor id)")
    p.add_argument("--ttl", default=env("capability_ttl", "24h"), help="lifetime, e.g. 90m, 8h (default 24h)")
    p.add_argument(
        "--out",
        "-o",
        default=None,
        metavar="FILE",
        help="write the token to FILE (mode 0600, not replaced if it exists) instead of printing it",
    )
    key_dir_arg(p)
    p.set_defaults(handler=_capability)

    h = "run an external agent's command (after --) behind the trust boundary, with a capability and the door"
    p = sub.add_parser(
        "agent",
        help=h,
        description=h + f". As root, CMD runs as user {AGENT_USER!r} (created if "
        "missing) and the run and key directories become the harness's alone.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--role", required=True, choices=("worker", "reviewer", "main", "public"))
    p.add_argument("--id", required=True, help="the node id the agent acts as")
    p.add_argument("--ttl", default=env("capability_ttl", "24h"), help="capability lifetime (default 24h)")
    p.add_argument(
        "--user",
        default=env("agent_user", AGENT_USER),
        help=f"OS user the agent runs as when this command runs as root (default {AGENT_USER})",
    )
    p.add_argument("--socket", default=env("door_socket"), metavar="PATH", help="door socket path")
    key_dir_arg(p)
    p.set_defaults(handler=_agent, cmd=[], takes_command=True)


def _door(args: argparse.Namespace) -> int:
    import signal

    apply_device(args)  # the door trains and evaluates what agents submit

    from ..expos import Door

    def _term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # end serving; the sessions close and sign the ledger below

    signal.signal(signal.SIGTERM, _term)
    door = Door(args.run_dir, socket_path=args.socket, key_dir=args.key_dir)
    print(f"rsi-master door: serving {Path(args.run_dir).resolve()} at {door.path}", file=sys.stderr, flush=True)
    try:
        door.serve()
    except KeyboardInterrupt:
        pass
    finally:
        door.close()
    return 0


def _capability(args: argparse.Namespace) -> int:
    from ..errors import RsiMasterError
    from ..expos import ExpOS

    with ExpOS.open(args.run_dir, key_dir=args.key_dir, writable=False) as expos:
        token = expos.issue(args.role, args.id, ttl_s=_parse_ttl(args.ttl))
    if args.out is None:
        print(token)
        return 0
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise RsiMasterError(f"{out} exists; refusing to replace a capability file") from None
    except OSError as exc:
        raise RsiMasterError(f"cannot write {out}: {exc.strerror}") from None
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return 0


def _agent(args: argparse.Namespace) -> int:
    from ..errors import RsiMasterError
    from ..expos import AgentProcess, ExpOS

    cmd = args.cmd
    if not cmd:
        raise RsiMasterError("agent: no command (give it after --, e.g. `-- expos quota.show`)")
    with ExpOS.open(args.run_dir, key_dir=args.key_dir, writable=False) as expos:
        token = expos.issue(args.role, args.id, ttl_s=_parse_ttl(args.ttl))
        run_id = expos.run.run_id
    agent = AgentProcess(args.run_dir, run_id, token, key_dir=args.key_dir, user=args.user, socket_path=args.socket)
    print(f"rsi-master agent: {args.role} {args.id}; {agent.boundary}", file=sys.stderr, flush=True)
    return agent.run(cmd)
