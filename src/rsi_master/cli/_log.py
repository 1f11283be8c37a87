"""`rsi-master log RUN_DIR`: the events, filterable, as a table or JSON lines."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import RsiMasterError
from ..expos import EVENT_KINDS, ROLES
from ..rundir import RunDir
from ._commands import help_of
from ._common import env, is_tty

NAME = "log"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument(
        "--kind",
        action="append",
        default=[],
        metavar="KIND",
        help="only this kind (repeatable; `data.*` matches a prefix)",
    )
    p.add_argument("--role", default=env("log_role"), help="only events by this actor role")
    p.add_argument("--actor", default=env("log_actor"), help="only events by this actor id")
    p.add_argument("--since", type=int, default=0, metavar="SEQ", help="start at this sequence number")
    p.add_argument("--limit", type=int, default=None, help="at most this many events")
    p.add_argument("--json", action="store_true", default=bool(env("log_json")), help="JSON lines, one event each")
    p.set_defaults(handler=run)


def _short(content: object, width: int = 60) -> str:
    """A payload shown whole, clipped: any kind, including ones no model describes (a ledger
    written by other code)."""
    text = json.dumps(content, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= width else text[: width - 1] + "…"


def _check_filters(run_: RunDir, kinds: list[str], role: str | None) -> None:
    """An unknown kind or role is an error, not an empty table. Known: what the package records
    (a valid kind this run has no event of yet shows nothing), or what this run holds (a
    ledger written by other code)."""

    ledger = run_.ledger
    for k in kinds:
        known = k in EVENT_KINDS or (k.endswith(".*") and any(e.startswith(k[:-1]) for e in EVENT_KINDS))
        # `%` is no kind's character, but a LIKE wildcard to the ledger's prefix query.
        if not known and ("%" in k or next(ledger.events(kinds=[k], limit=1), None) is None):
            raise RsiMasterError(
                f"unknown event kind {k!r}; kinds: {', '.join(sorted(EVENT_KINDS))} (or a prefix such as data.*)"
            )
    if role is not None and role not in ROLES and next(ledger.events(role=role, limit=1), None) is None:
        raise RsiMasterError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")


def run(args: argparse.Namespace) -> int:
    run_ = RunDir.open(args.run_dir)
    try:
        _check_filters(run_, args.kind, args.role)
        events = run_.ledger.events(
            kinds=args.kind, role=args.role, actor_id=args.actor, since=args.since, limit=args.limit
        )
        if args.json:
            for e in events:
                sys.stdout.write(e.model_dump_json() + "\n")
            return 0
        rows = [
            (
                str(e.seq),
                e.ts[:19].replace("T", " "),
                e.kind,
                f"{e.actor.role}:{e.actor.id}",
                str(len(e.artifacts)),
                _short(e.payload),
            )
            for e in events
        ]
        header = ("seq", "time (UTC)", "kind", "actor", "artifacts", "payload")
        if is_tty():
            from rich.console import Console
            from rich.table import Table

            table = Table(*header, title=f"{run_.run_id}: {len(rows)} events")
            for r in rows:
                table.add_row(*r)
            Console().print(table)
        else:
            widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
            for r in [header, *rows]:
                print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        return 0
    finally:
        run_.close()
