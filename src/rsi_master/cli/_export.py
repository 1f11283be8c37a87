"""`rsi-master export RUN_DIR --to DIR` and `rsi-master ledger-install URL`: a PostgreSQL run
written out as an ordinary run directory, and the one-time set-up of a database for runs."""

from __future__ import annotations

import argparse

from ..errors import RsiMasterError
from ..ledger import install_postgres, is_ledger_url, public_url
from ..rundir import export_run, verify_run
from ._commands import help_of
from ._common import env, key_dir_arg, ledger_arg

NAME = "export"
HELP = help_of(NAME)
INSTALL_HELP = help_of("ledger-install")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--to", required=True, metavar="DIR", help="a new (or empty) directory")
    key_dir_arg(p)
    ledger_arg(p)
    p.set_defaults(handler=run)
    q = sub.add_parser("ledger-install", help=INSTALL_HELP, description=INSTALL_HELP)
    q.add_argument("url", metavar="URL", help="postgresql:// URL of a role that may create schemas")
    q.add_argument(
        "--writer",
        action="append",
        default=[w for w in (env("ledger_writer") or "").split(",") if w],
        metavar="ROLE",
        help="a role that runs write as: it may create runs and append, never update or delete (repeatable)",
    )
    q.set_defaults(handler=install)


def run(args: argparse.Namespace) -> int:
    out = export_run(args.run_dir, args.to, key_dir=args.key_dir)
    report = verify_run(out, checkpoint=out / "witness.json")
    print("---")
    print(f"exported: {out}")
    print(f"events: {report.ledger.events}")
    print(f"verify: {'ok' if report.ok else f'{len(report.problems)} problem(s)'}")
    for p in report.problems[:10]:
        print(f"problem: {p}")
    return 0 if report.ok else 1


def install(args: argparse.Namespace) -> int:
    if not is_ledger_url(args.url):
        raise RsiMasterError(f"{args.url!r}: not a postgresql:// URL")
    install_postgres(args.url, args.writer)
    print("---")
    print(f"installed: {public_url(args.url)}")
    print(f"writers: {', '.join(args.writer) or '(none)'}")
    return 0
