"""`rsi-master checkpoint RUN_DIR`: sign the current ledger head and export it."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..rundir import RunDir
from ._commands import help_of
from ._common import env, key_dir_arg

NAME = "checkpoint"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        NAME,
        help=HELP,
        description=HELP + ". Keep the exported file outside the run "
        "directory: `verify --checkpoint FILE` then detects a ledger rolled back past it.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument(
        "--out", "-o", default=env("checkpoint_out"), metavar="FILE", help="write the signed checkpoint here"
    )
    key_dir_arg(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with RunDir.open(args.run_dir, key_dir=args.key_dir, writable=True) as run_:
        signed = run_.ledger.checkpoint()
    if args.out:
        signed.dump(Path(args.out))
    cp = signed.checkpoint
    print("---")
    print(f"run_id: {cp.run_id}\ntree_size: {cp.tree_size}\nroot: {cp.root}\nkey_id: {cp.key_id}")
    if args.out:
        print(f"exported: {args.out}")
    return 0
