"""`expos`: the agent-facing command line over the ExpOS tool registry.

    expos [--run DIR] [--role ROLE] [--id ID] [--json] TOOL ['{"json": "input"}' | -]
    expos tools [--role ROLE] [--schema]

Role, identity and run come from flags or EXPOS_ROLE, EXPOS_ID, EXPOS_RUN. Input is one
JSON object (an argument, or `-` for standard input). Exit codes: 0 done, 2 invalid input,
3 refused (role, guard or budget), 4 the action failed, 5 no usable run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

EXIT_INVALID, EXIT_REFUSED, EXIT_FAILED, EXIT_RUN = 2, 3, 4, 5


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="expos", description="Act on an RSI-Master run through ExpOS tools.")
    p.add_argument("--run", default=os.environ.get("EXPOS_RUN"), help="run directory (env EXPOS_RUN)")
    p.add_argument("--role", default=os.environ.get("EXPOS_ROLE", "public"), help="caller role (env EXPOS_ROLE)")
    p.add_argument("--id", default=os.environ.get("EXPOS_ID", "anonymous"), help="caller identity (env EXPOS_ID)")
    p.add_argument("--json", action="store_true", default=bool(os.environ.get("EXPOS_JSON")),
                   help="JSON output (env EXPOS_JSON)")
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


def _bad_identity(role: str, ident: str) -> bool:
    """Whether the ledger would refuse this actor id (it would say "malformed event", and only after
    the tool's action had run and stored its output), or the log could not show it on one line."""
    from pydantic import ValidationError

    from ..ledger import Actor

    if not ident.strip() or not ident.isprintable():
        return True
    try:
        Actor(role=role, id=ident)
    except ValidationError:
        return True
    return False


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from ..errors import RsiMasterError
    from ..expos import ROLES, Caller, ExpOS, ToolError, llm_tool_schemas, tools_for
    from ..expos._external import external_call

    if args.role not in ROLES:
        print(f"expos: error: unknown role {args.role!r}; roles: {', '.join(ROLES)}", file=sys.stderr)
        return EXIT_INVALID
    if args.tool == "tools":
        if args.schema:
            print(json.dumps(llm_tool_schemas(args.role), indent=1))
        else:
            for t in tools_for(args.role):
                print(f"{t.name:22} {t.description.splitlines()[0] if t.description else ''}")
        return 0
    raw = sys.stdin.read() if args.input == "-" else (args.input or "{}")
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("the input must be a JSON object")
    except ValueError as exc:
        print(f"expos: error: input is not a JSON object: {exc}", file=sys.stderr)
        return EXIT_INVALID
    if _bad_identity(args.role, args.id):
        print(f"expos: error: invalid identity {args.id[:40]!r}: --id (or EXPOS_ID) must be 1 to 128 printable "
              "characters, not blank", file=sys.stderr)
        return EXIT_INVALID
    if not args.run:
        print("expos: error: no run directory (use --run or EXPOS_RUN)", file=sys.stderr)
        return EXIT_RUN
    try:
        expos = ExpOS.open(args.run)
    except RsiMasterError as exc:
        print(f"expos: error: {exc}", file=sys.stderr)
        return EXIT_RUN
    try:
        result = external_call(expos, Caller(args.role, args.id), args.tool, data)
    except ToolError as exc:
        print(f"expos: {type(exc).__name__.removeprefix('Tool').lower()}: {exc}", file=sys.stderr)
        return exc.exit_code
    except RsiMasterError as exc:
        print(f"expos: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # a fault in the harness: one line for the agent, never a traceback
        print(f"expos: internal error in {args.tool}: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return EXIT_FAILED
    finally:
        expos.close()
    _print(result.model_dump(mode="json"), args.json)
    return 0


def console() -> None:
    sys.exit(main())


if __name__ == "__main__":
    console()
