"""`rsi-master guide RUN_DIR --text "..." [--prefer D] [--avoid D] [--stop-worker ID] [--pause|--resume]`:
a person's guidance to a running campaign, recorded as one `human.guidance` event."""

from __future__ import annotations

import argparse

from ..orchestra import guide_run
from ._commands import help_of
from ._common import env, key_dir_arg

NAME = "guide"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--text", default=env("guide_text", ""), help="free text for the Main (at most 4096 bytes)")
    p.add_argument(
        "--prefer",
        action="append",
        default=[],
        metavar="DIRECTION",
        help="a direction (family or family:method) to open first",
    )
    p.add_argument("--avoid", action="append", default=[], metavar="DIRECTION", help="a direction not to open")
    p.add_argument("--stop-worker", action="append", default=[], metavar="ID", help="a Worker to stop (it finalizes)")
    flow = p.add_mutually_exclusive_group()
    flow.add_argument("--pause", action="store_const", const="pause", dest="flow", help="launch no new job")
    flow.add_argument("--resume", action="store_const", const="resume", dest="flow", help="launch again")
    key_dir_arg(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    request: dict[str, object] = {"text": args.text, "prefer": args.prefer, "avoid": args.avoid}
    request["stop_worker"] = args.stop_worker
    if args.flow:
        request["flow"] = args.flow
    event = guide_run(args.run_dir, request, key_dir=args.key_dir)  # a refusal writes nothing
    print(f"guidance: event {event.seq} by {event.actor.id}")
    return 0
