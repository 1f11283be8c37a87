"""`rsi-master tasks`: the task suite with measured base and reference scores."""

from __future__ import annotations

import argparse
import json
from typing import Any, cast

from ..landscape import load
from ..tasks import SPLITS, FileTask, get_task, list_tasks, resolve_task
from ._commands import help_of
from ._common import env, is_tty

NAME = "tasks"
HELP = help_of(NAME)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help=HELP, description=HELP)
    p.add_argument("--json", action="store_true", default=bool(env("tasks_json")), help="one JSON object per task")
    p.set_defaults(handler=run)
    actions = p.add_subparsers(dest="tasks_action", metavar="{check}")
    help_check = "validate task directories (task.toml and JSONL splits: docs/your-model.md); writes nothing"
    c = actions.add_parser("check", help=help_check, description=help_check)
    c.add_argument("dirs", nargs="+", metavar="DIR", help="a task directory")
    c.add_argument("--json", action="store_true", default=bool(env("tasks_json")), help="one JSON object per task")
    c.set_defaults(handler=check)


def check(args: argparse.Namespace) -> int:
    """Load each directory as a run would (every check; bad input is one line, exit 1)."""
    from pathlib import Path

    for d in args.dirs:
        # The call `run` and `init` make, so that what passes here is what a run accepts
        # (a directory whose task takes a built-in task's name included).
        task = cast("FileTask", resolve_task(Path(d)))  # a path resolves to its directory's task
        row: dict[str, Any] = {
            "task": task.name,
            "dir": str(d),
            "capability": task.capability,
            "format": task.format,
            "scorer": task.scorer.kind,
            **{split: len(task.eval_items(split)) for split in SPLITS},
            "train": len(task.train_pool()),
            "train_dropped": task.train_dropped,
            "digest": task.digest,
        }
        if args.json:
            print(json.dumps(row, sort_keys=True))
            continue
        counts = ", ".join(f"{k} {row[k]}" for k in (*SPLITS, "train"))
        dropped = (
            f" ({row['train_dropped']} train items dropped: they repeat protected items)" if task.train_dropped else ""
        )
        print(
            f"ok: {task.name} ({d}): {task.scorer.kind} scorer, {task.format} format; {counts}{dropped}; digest {task.digest}"
        )
    return 0


def _fmt(score: float | None) -> str:
    return "-" if score is None else f"{100 * score:.1f}%"


def run(args: argparse.Namespace) -> int:
    landscape = load()
    rows: list[dict[str, Any]] = []
    for name in list_tasks():
        task = get_task(name)
        measured = landscape.tasks.get(name)
        base = measured.base if measured is not None else None
        ref = measured.reference if measured is not None else None
        rows.append(
            {
                "task": name,
                "capability": task.capability,
                "families": sorted(task.generators()),
                "base_score": base.score if base is not None else None,
                "reference_score": ref.score if ref is not None else None,
                "split": landscape.split,
            }
        )
    if args.json:
        for r in rows:
            print(json.dumps(r, sort_keys=True))
        return 0
    header = ("task", "base", "reference", "families")
    table = [(r["task"], _fmt(r["base_score"]), _fmt(r["reference_score"]), ", ".join(r["families"])) for r in rows]
    if is_tty():
        from rich.console import Console
        from rich.table import Table

        t = Table(*header, title=f"tasks (scores on the {landscape.split} split, see docs/tasks.md)")
        for row in table:
            t.add_row(*row)
        Console().print(t)
    else:
        widths = [max(len(h), *(len(r[i]) for r in table)) for i, h in enumerate(header)]
        for row in [header, *table]:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return 0
