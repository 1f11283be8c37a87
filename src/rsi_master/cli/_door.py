"""`rsi-master door | capability | agent`: the trust boundary between the harness and agents.

- `door RUN_DIR` serves the run's ExpOS on a Unix socket from this (harness-owned) process.
- `capability RUN_DIR --role R --id ID` issues a capability (needs the key directory).
- `agent RUN_DIR --role R --id ID -- CMD ...` starts an external agent (a coding agent, an
  MCP client, a script) behind the boundary: the harness issues the agent's capability,
  serves the door, and runs CMD under a uid of its own, in namespaces of its own, with its
  capability in a 0400 file, limits on processes, memory and disk, and an ephemeral home;
  it reaches the door's socket and nothing of the run: run directory and key directory are
  made the harness's alone (0700). Without root there is no second uid to drop to: CMD then
  runs as this user, which could read the key directory; the command says so and the
  guarantees rest on detection.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import RsiMasterError
from ..expos import AgentLimits, AgentProcess, Door, ExpOS, parse_size
from ._commands import help_of
from ._common import apply_device, device_arg, env, key_dir_arg

__all__ = ["add_parser"]


def _parse_ttl(text: str) -> float:
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
    h = help_of("door")
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

    h = help_of("capability")
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

    h = help_of("agent")
    p = sub.add_parser(
        "agent",
        help=h,
        description=h + ". As root, CMD runs under a uid of its own (no passwd entry, freed after) in its own "
        "PID, mount and IPC namespaces, and the run and key directories become the harness's alone; every "
        "process it starts ends with it.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--role", required=True, choices=("worker", "reviewer", "main", "public"))
    p.add_argument("--id", required=True, help="the node id the agent acts as")
    p.add_argument("--ttl", default=env("capability_ttl", "24h"), help="capability lifetime (default 24h)")
    p.add_argument(
        "--max-procs",
        type=int,
        default=env("agent_max_procs", "256"),
        metavar="N",
        help="processes and threads the agent may run at once (env RSI_MASTER_AGENT_MAX_PROCS; default 256)",
    )
    p.add_argument(
        "--memory",
        default=env("agent_memory", "8G"),
        metavar="SIZE",
        help="heap of each agent process, RLIMIT_DATA (env RSI_MASTER_AGENT_MEMORY; default 8G)",
    )
    p.add_argument(
        "--disk",
        default=env("agent_disk", "2G"),
        metavar="SIZE",
        help="size of the agent's home and of its /tmp, each a tmpfs removed after it, and its largest file "
        "(env RSI_MASTER_AGENT_DISK; default 2G)",
    )
    p.add_argument(
        "--expose",
        action="append",
        default=[],
        metavar="PATH",
        help="a host path the agent may read, bound read-only into its view: its own tools where they live "
        "under a hidden or closed directory (/home, /root, /tmp), e.g. ~/.local/share/claude; repeatable",
    )
    p.add_argument("--socket", default=env("door_socket"), metavar="PATH", help="door socket path")
    key_dir_arg(p)
    p.set_defaults(handler=_agent, cmd=[], takes_command=True)


def _door(args: argparse.Namespace) -> int:
    import signal

    apply_device(args)  # the door trains and evaluates what agents submit

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
    cmd = args.cmd
    if not cmd:
        raise RsiMasterError("agent: no command (give it after --, e.g. `-- expos quota.show`)")
    limits = AgentLimits(
        procs=args.max_procs, memory=parse_size(args.memory, "--memory"), disk=parse_size(args.disk, "--disk")
    )
    with ExpOS.open(args.run_dir, key_dir=args.key_dir, writable=False) as expos:
        token = expos.issue(args.role, args.id, ttl_s=_parse_ttl(args.ttl))
        run_id = expos.run.run_id
    agent = AgentProcess(
        args.run_dir, run_id, token, key_dir=args.key_dir, socket_path=args.socket, limits=limits, expose=args.expose
    )
    print(f"rsi-master agent: {args.role} {args.id}; {agent.boundary}", file=sys.stderr, flush=True)
    return agent.run(cmd)
