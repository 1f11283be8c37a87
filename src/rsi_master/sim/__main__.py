"""`python -m rsi_master.sim`: generate a world file, or describe one.

    python -m rsi_master.sim generate --seed 3 [--preset hard] [--flag forget=0.5 ...] [-o FILE]
    python -m rsi_master.sim describe FILE
    python -m rsi_master.sim presets

Bad flags and bad files end with one line on stderr and exit status 2; nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._describe import describe
from ._errors import SimInputError, WorldFileError
from ._file import load_world, save_world
from ._flags import PRESETS, flags_from, parse_overrides
from ._generate import generate_world


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rsi_master.sim", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    gen = sub.add_parser("generate", help="write a world file")
    gen.add_argument("--seed", type=int, required=True)
    gen.add_argument("--preset", default="default", help=f"one of {', '.join(sorted(PRESETS))}")
    gen.add_argument("--flag", action="append", default=[], metavar="NAME=VALUE", help="override one flag")
    gen.add_argument("-o", "--output", type=Path, help="file to write (default: print the JSON)")
    desc = sub.add_parser("describe", help="describe a world file")
    desc.add_argument("path", type=Path)
    sub.add_parser("presets", help="print the presets' flags")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "generate":
            flags = flags_from(args.preset, **parse_overrides(args.flag))
            land = generate_world(args.seed, flags, preset=args.preset if not args.flag else None)
            if args.output is None:
                print(land.model_dump_json(indent=1))
            else:
                if args.output.parent and not args.output.parent.is_dir():
                    raise SimInputError(f"{args.output.parent}: no such directory")
                save_world(land, args.output)
                print("\n".join(describe(land)))
        elif args.cmd == "describe":
            print("\n".join(describe(load_world(args.path))))
        else:
            for name, fl in sorted(PRESETS.items()):
                print(f"{name}: {fl.model_dump_json()}")
    except (SimInputError, WorldFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
