"""`rsi-master report RUN_DIR [RUN_DIR ...] [-o FILE]`: one run's report, or the overview of several
runs (or of a directory of runs), each one HTML file that opens offline."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import RsiMasterError
from ..views import REPORT_FILE, overview_html, read_runs, run_dirs, write_page, write_report
from ._commands import help_of
from ._common import env, key_dir_arg

NAME = "report"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument(
        "paths",
        nargs="+",
        metavar="RUN_DIR",
        help="a run directory (its report), or several, or a directory of runs (their overview)",
    )
    p.add_argument(
        "-o",
        "--output",
        default=env("report_output"),
        metavar="FILE",
        help="where to write (env RSI_MASTER_REPORT_OUTPUT; default RUN_DIR/report.html for one run, "
        "RUNS_DIR/index.html for a directory of runs, ./overview.html for a list)",
    )
    key_dir_arg(p)
    p.set_defaults(handler=run)


def _target(output: str | None, default: Path) -> Path:
    target = Path(output) if output else default
    if not target.parent.is_dir():
        raise RsiMasterError(f"{target}: its directory {target.parent} does not exist")
    if target.is_dir():
        raise RsiMasterError(f"{target}: is a directory (give a file name with -o)")
    return target


def run(args: argparse.Namespace) -> int:
    dirs = run_dirs(args.paths)  # a path that is no run and holds none is one clear line, nothing written
    single = len(args.paths) == 1 and dirs == [Path(args.paths[0])]
    try:
        if single:
            path = write_report(dirs[0], _target(args.output, dirs[0] / REPORT_FILE), key_dir=args.key_dir)
        else:
            default = Path(args.paths[0]) / "index.html" if len(args.paths) == 1 else Path("overview.html")
            target = _target(args.output, default)
            path = write_page(target, overview_html(read_runs(dirs, key_dir=args.key_dir), target))
    except OSError as exc:
        raise RsiMasterError(f"cannot write the report: {exc.strerror or exc}") from None
    print(f"report: {path}")
    print(f"runs: {len(dirs)}")
    return 0


def report_for(run_dir: str | Path | None, key_dir: str | None) -> str:
    """The report a finished `run` or `resume` writes into its directory: its path, or `n/a` and
    why (a report that cannot be written never costs the run its summary)."""
    if run_dir is None:
        return "n/a (no run directory)"

    try:
        return str(write_report(run_dir, key_dir=key_dir))
    except (RsiMasterError, OSError) as exc:
        return f"n/a ({exc})"
