"""`rsi-master sim`: simulated worlds (docs/sim.md).

    rsi-master sim generate --seed N [--preset P] [--flag NAME=VALUE ...] [-o FILE]
    rsi-master sim describe FILE
    rsi-master sim presets
    rsi-master sim calibrate
    rsi-master sim pilot (--seed N [--preset P] [--flag NAME=VALUE ...] | --world FILE) [-o FILE]

`generate` writes a world file (or prints its JSON), `describe` prints every hidden
parameter (the ground truth), `pilot` writes the prior a pilot measures on a world (a
landscape file of `rsi_master.landscape`'s format, for `rsi-master run --backend sim --prior
FILE`: `landscape.sim_pilot`), `calibrate` fits the simulator's curve model to the shipped
landscape's measured curves and prints the fit error against their seed-to-seed spread.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import RsiMasterError
from ..landscape import dumps, pilot_seconds, save, sim_calibration, sim_pilot
from ..sim import (
    PRESETS,
    SimInputError,
    describe_world,
    flags_from,
    generate_world,
    load_world,
    parse_overrides,
    save_world,
)
from ._commands import help_of
from ._common import old_flag

NAME = "sim"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    verbs = p.add_subparsers(dest="sim_command", metavar="SUBCOMMAND")
    gen = verbs.add_parser("generate", help="write a world file (or print its JSON)")
    gen.add_argument("--seed", type=int, required=True, help="generator seed")
    gen.add_argument("--preset", default="default", help="default, hard or calibrated")
    gen.add_argument("--flag", action="append", default=[], metavar="NAME=VALUE", help="override a flag (JSON value)")
    gen.add_argument("-o", "--output", type=Path, default=None, help="file to write (default: print the JSON)")
    gen.set_defaults(handler=run_generate)
    desc = verbs.add_parser("describe", help="print a world file's parameters (its ground truth)")
    desc.add_argument("path", type=Path)
    desc.set_defaults(handler=run_describe)
    verbs.add_parser("presets", help="print each preset's flags").set_defaults(handler=run_presets)
    cal = verbs.add_parser("calibrate", help="fit the curve model to the shipped landscape; print the fit error")
    cal.set_defaults(handler=run_calibrate)
    pilot = verbs.add_parser(
        "pilot", help="measure a prior on a world (learning curves on dev) for `run --backend sim --prior`"
    )
    pilot.add_argument("--seed", type=int, default=None, help="generator seed of the world")
    pilot.add_argument("--preset", default="default", help="default, hard or calibrated (with --seed)")
    pilot.add_argument("--flag", action="append", default=[], metavar="NAME=VALUE", help="override a flag (JSON value)")
    pilot.add_argument("--world", type=Path, default=None, metavar="FILE", help="a world file instead of --seed")
    old_flag(pilot, "--landscape", "world", type=Path, metavar="FILE")
    pilot.add_argument("-o", "--output", type=Path, default=None, help="file to write (default: print the JSON)")
    pilot.set_defaults(handler=run_pilot)
    p.set_defaults(handler=lambda args: (p.print_help(), 2)[1])


def run_generate(args: argparse.Namespace) -> int:
    flags = flags_from(args.preset, **parse_overrides(args.flag))
    land = generate_world(args.seed, flags, preset=None if args.flag else args.preset)
    if args.output is None:
        print(land.model_dump_json(indent=1))
        return 0
    if not args.output.parent.is_dir():
        raise SimInputError(f"{args.output.parent}: no such directory")
    save_world(land, args.output)
    print("\n".join(describe_world(land)))
    return 0


def run_describe(args: argparse.Namespace) -> int:
    print("\n".join(describe_world(load_world(args.path))))
    return 0


def run_presets(args: argparse.Namespace) -> int:
    for name, flags in sorted(PRESETS.items()):
        print(f"{name}: {flags.model_dump_json()}")
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    fit = sim_calibration()
    print("\n".join(fit.lines()))
    for key, value in fit.flags().items():
        print(f"flag.{key}: {value}")
    return 0


def run_pilot(args: argparse.Namespace) -> int:
    if (args.seed is None) == (args.world is None):
        raise RsiMasterError("give --seed N or --world FILE (one of them)")
    if args.world is not None:
        if args.flag or args.preset != "default":
            raise RsiMasterError("--preset and --flag are for --seed: a world file has its own")
        land = load_world(args.world)
    else:
        flags = flags_from(args.preset, **parse_overrides(args.flag))
        land = generate_world(args.seed, flags, preset=None if args.flag else args.preset)
    prior = sim_pilot(land)
    if args.output is None:
        print(dumps(prior), end="")
        return 0
    if not args.output.parent.is_dir():
        raise SimInputError(f"{args.output.parent}: no such directory")
    save(prior, args.output)
    curves = prior.curves(land.task_name)
    first = next(iter(curves.values()))
    print(
        f"task: {land.task_name}\npilot: {len(curves)} curves x {len(first.points)} snapshots x {len(first.seeds)} "
        f"seeds, scored on dev ({land.split_sizes['dev']} items), {pilot_seconds(prior):.0f} simulated slot-seconds "
        "of training"
    )
    for label, c in sorted(curves.items()):
        print(f"curve {label}: " + ", ".join(f"{p.multiple:g}x {100 * p.score:.1f}%" for p in c.points))
    print(f"written: {args.output}")
    return 0
