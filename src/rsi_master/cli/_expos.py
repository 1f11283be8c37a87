"""`expos`: the agent-facing command line over the ExpOS tool registry.

    expos [--door SOCKET | --run DIR] [--capability-file FILE | -] [--json] TOOL ['{"json": "input"}' | -]
    expos tools [--role ROLE] [--schema]

Who calls is not declared: the role and node id come from the capability the harness
issued, read from a file (`--capability-file` or EXPOS_CAPABILITY_FILE; `-` reads it from
the first line of standard input) or an inherited descriptor (EXPOS_CAPABILITY_FD), never
from the command line or the environment, where other processes could read it. An agent reaches the run through the door
(`--door` or EXPOS_DOOR: the harness's Unix socket); `--run` opens the run directory in
this process, which only the operator can (it needs the key directory). Input is one
JSON object (an argument, or `-` for standard input). Exit codes: 0 done, 2 invalid input,
3 refused (capability, role, guard or budget), 4 the action failed (also an accepted call whose
result says `status: failed`, such as a failed experiment), 5 no usable run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..errors import RsiMasterError
from ..expos import (
    INLINE_REFUSED,
    ROLES,
    CapabilityError,
    DoorUnreachable,
    ExpOS,
    ToolError,
    door_call,
    external_call,
    llm_tool_schemas,
    read_capability,
    tools_for,
)

EXIT_INVALID, EXIT_REFUSED, EXIT_FAILED, EXIT_RUN = 2, 3, 4, 5


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="expos", description="Act on an RSI-Master run through ExpOS tools.")
    p.add_argument(
        "--door",
        default=os.environ.get("EXPOS_DOOR"),
        help="the run's door: the harness's Unix socket (env EXPOS_DOOR)",
    )
    p.add_argument(
        "--run",
        default=os.environ.get("EXPOS_RUN"),
        help="operator only: open the run directory here, with the key directory (env EXPOS_RUN)",
    )
    # Kept only to answer it with a clear error: a token in argv is readable by every process.
    p.add_argument("--capability", default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--capability-file",
        default=os.environ.get("EXPOS_CAPABILITY_FILE"),
        metavar="FILE",
        help="the capability the harness issued to this caller, read from FILE, or from the first line of "
        "standard input with - (env EXPOS_CAPABILITY_FILE; or an inherited descriptor: EXPOS_CAPABILITY_FD)",
    )
    p.add_argument(
        "--role", default=None, help="with `tools`: list this role's tools (calls take the role from the capability)"
    )
    p.add_argument(
        "--json", action="store_true", default=bool(os.environ.get("EXPOS_JSON")), help="JSON output (env EXPOS_JSON)"
    )
    p.add_argument("--schema", action="store_true", help="with `tools`: print JSON Schemas for LLM tool calling")
    p.add_argument("tool", metavar="TOOL", help="a tool name such as data.generate, or `tools` to list them")
    p.add_argument("input", nargs="?", default=None, help="JSON object with the tool's input, or - for stdin")
    return p


def _print(obj: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(obj, indent=1, sort_keys=True))
        return
    for key, value in obj.items():
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        print(f"{key}: {text}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    if args.capability is not None or os.environ.get("EXPOS_CAPABILITY"):
        print(f"expos: error: {INLINE_REFUSED}", file=sys.stderr)
        return EXIT_INVALID

    if args.tool == "tools":
        role = args.role or "public"
        if role not in ROLES:
            print(f"expos: error: unknown role {role!r}; roles: {', '.join(ROLES)}", file=sys.stderr)
            return EXIT_INVALID
        if args.schema:
            print(json.dumps(llm_tool_schemas(role), indent=1))
        else:
            for t in tools_for(role):
                print(f"{t.name:22} {t.description.splitlines()[0] if t.description else ''}")
        return 0
    if args.role is not None:
        print(
            "expos: error: --role only lists tools; a call's role comes from its capability (--capability-file)",
            file=sys.stderr,
        )
        return EXIT_INVALID
    stdin = sys.stdin.read() if "-" in (args.input, args.capability_file) else ""
    token_line = ""
    if args.capability_file == "-":
        token_line, _, stdin = stdin.partition("\n")
    raw = stdin if args.input == "-" else (args.input or "{}")
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("the input must be a JSON object")
    except ValueError as exc:
        print(f"expos: error: input is not a JSON object: {exc}", file=sys.stderr)
        return EXIT_INVALID

    try:
        args.capability = read_capability(
            args.capability_file, fd=os.environ.get("EXPOS_CAPABILITY_FD"), stdin=token_line
        )
    except CapabilityError as exc:
        print(f"expos: error: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    if not args.capability:
        print(
            "expos: error: no capability (use --capability-file FILE, - for standard input, or "
            "EXPOS_CAPABILITY_FILE: the token the harness issued to this agent)",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    if not args.door and not args.run:
        print(
            "expos: error: no door and no run (use --door or EXPOS_DOOR; the operator may use --run)", file=sys.stderr
        )
        return EXIT_RUN
    try:
        if args.door:
            out = door_call(args.door, args.capability, args.tool, data)
        else:
            try:
                expos = ExpOS.open(args.run, gate_process=True)  # an agent's call runs here
            except RsiMasterError as exc:
                print(f"expos: error: {exc}", file=sys.stderr)
                return EXIT_RUN
            try:
                out = external_call(expos, expos.authenticate(args.capability), args.tool, data).model_dump(mode="json")
            finally:
                expos.close()
    except ToolError as exc:
        print(f"expos: {type(exc).__name__.removeprefix('Tool').lower()}: {exc}", file=sys.stderr)
        return exc.exit_code
    except DoorUnreachable as exc:
        print(f"expos: error: {exc}", file=sys.stderr)
        return EXIT_RUN
    except RsiMasterError as exc:
        print(f"expos: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # a fault in the harness: one line for the agent, never a traceback
        print(f"expos: internal error in {args.tool}: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return EXIT_FAILED
    _print(out, args.json)
    if out.get("status") == "failed":
        # The call was accepted and recorded, but its action failed (an experiment whose training
        # broke): a script must not read that as done.
        print(f"expos: failed: {args.tool}: {out.get('error') or 'the action failed'}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def console() -> None:
    sys.exit(main())


if __name__ == "__main__":
    console()
