"""`rsi-master landscape`: measure the research landscape and report it (docs/landscape.md).

    rsi-master landscape measure [--only KIND] [--tasks T ...] [--families F ...] [curve options]
    rsi-master landscape probe TASK FAMILY [recipe options]
    rsi-master landscape rescore curve/TASK/LABEL ...
    rsi-master landscape report [--budgets 5m 10m 1h] [--markdown] [--json]

Measurements append to the results file and are skipped when recorded already, so a
measurement can be stopped and resumed; `measure` then rebuilds the landscape file from the
results (`--only nothing`: rebuild only). Training and evaluation are imported only when a
measurement runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import RsiMasterError
from ..landscape import (
    CURVE_BATCH,
    CURVE_MULTIPLES,
    TASK_ORDER,
    CurveLabel,
    Measurer,
    build,
    expected_rows,
    load,
    markdown_lines,
    plan,
    run_plan,
    save,
)
from ..orchestra import parse_budget
from ..tasks import UnknownTaskError, get_task, list_tasks
from ._commands import help_of
from ._common import is_tty

NAME = "landscape"
HELP = help_of(NAME)
_RESULTS = "benchmarks/landscape/results.jsonl"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    verbs = p.add_subparsers(dest="landscape_command", metavar="SUBCOMMAND")

    def common(q: argparse.ArgumentParser, *, measuring: bool) -> None:
        q.add_argument(
            "--landscape",
            type=Path,
            default=None,
            metavar="FILE",
            help="the landscape file (default: $RSI_MASTER_LANDSCAPE, else the shipped one)",
        )
        if measuring:
            q.add_argument("--results", type=Path, default=Path(_RESULTS), help=f"raw figures (default {_RESULTS})")
            q.add_argument(
                "--root",
                type=Path,
                default=Path("runs/landscape"),
                help="data, checkpoints and snapshots (large; default runs/landscape)",
            )
            q.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
            q.add_argument(
                "--eval-limit",
                type=int,
                default=None,
                help="score only the first N items of a split (a quick check, not a landscape figure)",
            )

    m = verbs.add_parser("measure", help="measure base scores, curves and references; rebuild the landscape file")
    common(m, measuring=True)
    m.add_argument(
        "--only",
        choices=("base", "curves", "reference", "reference-continue", "nothing"),
        default=None,
        help="one kind of measurement (`nothing`: rebuild the landscape file only)",
    )
    m.add_argument("--tasks", nargs="+", default=None, help="these tasks (default: the suite)")
    m.add_argument("--families", nargs="+", default=(), help="only these generator families' curves")
    m.add_argument(
        "--multiples",
        type=float,
        nargs="+",
        default=None,
        help="curve points in default experiments (the last is the run's length)",
    )
    m.add_argument(
        "--params", nargs="+", default=[], metavar="KNOB=VALUE", help="knobs the curves fix (a data selection)"
    )
    m.add_argument("--method", choices=("sft", "lora"), default="sft", help="full fine-tuning or LoRA adapters")
    m.add_argument(
        "--batch", type=int, default=None, help="batch size (default: the curves' 8); another is labelled @bN"
    )
    m.add_argument("--prompt-loss", action="store_true", help="train on the prompt's tokens too (+prompt_loss)")
    m.add_argument("--seed", type=int, default=0, help="data and training seed; a nonzero seed repeats a curve (@sS)")
    m.add_argument("--worker", type=int, default=0, help="this measurer's index (parallel measurers share --results)")
    m.add_argument("--workers", type=int, default=1)
    m.set_defaults(handler=run_measure)

    pr = verbs.add_parser("probe", help="one experiment of a given recipe (a point off the curves)")
    common(pr, measuring=True)
    pr.add_argument("task")
    pr.add_argument("family")
    pr.add_argument("--method", default="sft")
    pr.add_argument("--batch-size", type=int, default=32)
    pr.add_argument("--lr", type=float, default=1e-3)
    pr.add_argument("--scheduler", default="cosine")
    pr.add_argument("--multiple", type=float, default=1.0)
    pr.add_argument("--examples", type=int, default=None, help="training rows (overrides --multiple)")
    pr.add_argument("--parent", default=None, help="parent checkpoint (default: the base model)")
    pr.set_defaults(handler=run_probe)

    rs = verbs.add_parser("rescore", help="re-evaluate recorded curves from their snapshots, in place")
    common(rs, measuring=True)
    rs.add_argument("keys", nargs="+", metavar="curve/TASK/LABEL")
    rs.set_defaults(handler=run_rescore)

    rp = verbs.add_parser("report", help="per task and curve: expected score at budgets, horizon, spread")
    common(rp, measuring=False)
    rp.add_argument(
        "--budgets",
        nargs="+",
        default=["5m", "10m", "1h"],
        help="seconds of one slot's training (90s, 5m, 1h30m; default 5m 10m 1h)",
    )
    rp.add_argument("--tasks", nargs="+", default=())
    out = rp.add_mutually_exclusive_group()
    out.add_argument("--markdown", action="store_true", help="the tables of docs/tasks.md and the targets")
    out.add_argument("--json", action="store_true", help="one JSON object per curve")
    rp.set_defaults(handler=run_report)
    p.set_defaults(handler=lambda args: (p.print_help(), 2)[1])


def _measurer(args: argparse.Namespace, *, trains: bool = True) -> Any:
    if args.threads < 1 or (args.eval_limit is not None and args.eval_limit < 1):
        raise RsiMasterError("--threads and --eval-limit must be positive")
    if trains:
        import torch

        # One thread per measurer: on a shared 2-core machine two OpenMP threads per process
        # spin at barriers whenever either is descheduled, which makes a step several times slower.
        torch.set_num_threads(args.threads)
    return Measurer(results=args.results, root=args.root, eval_limit=args.eval_limit)


def _rebuild(args: argparse.Namespace, m: Any) -> None:
    path = save(build(m.rows()), args.landscape)
    m.log(f"landscape written to {path}")


def _known(task: str) -> None:
    """An unknown task fails in one line before anything runs."""

    try:
        get_task(task)
    except UnknownTaskError as exc:
        raise RsiMasterError(str(exc).strip("\"'")) from None


def _knob_value(text: str) -> Any:
    return json.loads(text) if text[:1] in '-0123456789[{tf"' else text


def run_measure(args: argparse.Namespace) -> int:
    tasks = args.tasks or [t for t in TASK_ORDER if t in list_tasks()] + [
        t for t in list_tasks() if t not in TASK_ORDER
    ]
    for t in tasks:
        _known(t)
    params: dict[str, Any] = {}
    for kv in args.params:
        k, eq, v = kv.partition("=")
        if not eq or not k:
            raise RsiMasterError(f"--params {kv!r}: give KNOB=VALUE")
        try:
            params[k] = _knob_value(v)
        except json.JSONDecodeError:
            raise RsiMasterError(f"--params {kv!r}: {v!r} is not a JSON value") from None
    batch = CURVE_BATCH if args.batch is None else args.batch
    if batch < 1 or args.seed < 0 or args.workers < 1 or not 0 <= args.worker < args.workers:
        raise RsiMasterError("--batch must be positive, --seed not negative, and 0 <= --worker < --workers")
    multiples = tuple(args.multiples or CURVE_MULTIPLES)
    if min(multiples) <= 0:
        raise RsiMasterError("--multiples must be positive")
    m = _measurer(args, trains=args.only != "nothing")
    if args.only != "nothing":
        steps = plan(
            m,
            tasks,
            only=args.only,
            families=args.families,
            multiples=multiples,
            params=params or None,
            label=lambda f: CurveLabel.of(f, params, args.method, batch, args.prompt_loss, args.seed),
        )
        run_plan(m, steps, args.worker, args.workers)
    _rebuild(args, m)
    return 0


def run_probe(args: argparse.Namespace) -> int:
    _known(args.task)
    m = _measurer(args)
    m.probe(
        args.task,
        args.family,
        method=args.method,
        batch_size=args.batch_size,
        lr=args.lr,
        scheduler=args.scheduler,
        multiple=args.multiple,
        examples=args.examples,
        parent=args.parent,
    )
    _rebuild(args, m)
    return 0


def run_rescore(args: argparse.Namespace) -> int:
    m = _measurer(args)
    m.rescore(args.keys)
    _rebuild(args, m)
    return 0


def run_report(args: argparse.Namespace) -> int:
    landscape = load(args.landscape)
    if args.markdown:
        print("\n".join(markdown_lines(landscape)))
        return 0
    budgets = [parse_budget(b) for b in args.budgets]
    rows = expected_rows(landscape, budgets, args.tasks)
    if args.json:
        for r in rows:
            print(json.dumps({**r, "expected": dict(zip(args.budgets, r["expected"]))}, sort_keys=True))
        return 0
    header = ("task", "curve", *(f"at {b}" for b in args.budgets), "horizon", "seeds", "spread")
    table = [
        (
            r["task"],
            r["curve"],
            *("-" if e is None else f"{100 * e:.1f}%" for e in r["expected"]),
            f"x{r['horizon']:g}",
            str(r["seeds"]),
            f"{100 * r['spread']:.1f}",
        )
        for r in rows
    ]
    title = (
        f"expected {landscape.split} score after a slot's training for the budget "
        "(seconds per token: the landscape's median), horizon in default experiments, "
        "spread in points between seeds"
    )
    if is_tty():
        from rich.console import Console
        from rich.table import Table

        t = Table(*header, title=title)
        for row in table:
            t.add_row(*row)
        Console().print(t)
    else:
        print(title)
        widths = [max(len(h), *(len(r[i]) for r in table)) if table else len(h) for i, h in enumerate(header)]
        for row in [header, *table]:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return 0
