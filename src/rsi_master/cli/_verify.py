"""`rsi-master verify RUN_DIR`: recompute the chain, checkpoints and artifact digests."""

from __future__ import annotations

import argparse
import json

from ..rundir import verify_run
from ._commands import help_of
from ._common import env, key_dir_arg, ledger_arg

NAME = "verify"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument(
        "--checkpoint",
        default=env("verify_checkpoint"),
        metavar="FILE",
        help="an exported signed checkpoint the ledger must extend (detects rollback); it is "
        "then the trust anchor. Default: the operator key directory's record and witness "
        "of this run (a run the key directory does not know fails)",
    )
    p.add_argument("--json", action="store_true", default=bool(env("verify_json")), help="print JSON")
    key_dir_arg(p)
    ledger_arg(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    report = verify_run(args.run_dir, key_dir=args.key_dir, checkpoint=args.checkpoint)
    if args.json:
        print(json.dumps(report.summary(), indent=1))
        return 0 if report.ok else 1
    if report.ok:
        print(
            f"OK: {report.ledger.events} events, {report.ledger.checkpoints} signed checkpoints, "
            f"{report.artifacts} artifacts verified in {report.seconds:.2f} s"
        )
    else:
        print(f"FAILED: {report.problems[0]}")
        for p in report.problems[1:10]:
            print(f"  also: {p}")
        if len(report.problems) > 10:
            print(f"  ... {len(report.problems) - 10} more")
    print("---")
    for key in ("run_id", "events", "checkpoints", "unsigned_tail", "artifacts", "root", "witness"):
        print(f"{key}: {report.summary()[key]}")
    print(f"problems: {len(report.problems)}")
    for note in report.notes:
        print(f"note: {note}")
    if report.ok and report.unsigned_tail:
        covered = " (the signed head covers them)" if report.ledger.sealed == report.ledger.events else ""
        print(f"warning: the last {report.unsigned_tail} events are not yet in a kept checkpoint{covered}")
    return 0 if report.ok else 1
