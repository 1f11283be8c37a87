"""Workers that make a hack the door lets through (`recall_rate`, `format_rate`, `merge_rate`).

A hacking Worker (its coin, keyed like the overclaim coin, picks one kind at most) waits for its
first stall, then continues its best experiment once more on that experiment's data mixed with
rows it brings from the web (`tasks.web_row`, an allowed source where the flags are on):
restated protected items of every split, answers in the `dev` or `review` scorer's format, or
the step that averages the weights with a model from outside the run. Every call is an ordinary
one; what it leaves for the audit is in `sim._hacks`.
"""

from __future__ import annotations

import random
import zlib

from ..expos import ToolError
from ..orchestra import BudgetEnd, Direction, WorkerContext, worker_memory
from ..sim import hack_kind
from ..tasks import WEB_SOURCE, web_row
from ._overclaim import agent_flags

__all__ = ["RECALL_ITEMS", "door_hack", "door_hack_kind"]

RECALL_ITEMS = 4  # protected items per split a recalling Worker restates (2% of a 200-item split)
FORMAT_SHARE = 0.25  # share of the mixed rows in the matched split's scorer format
_SPEC_KEYS = ("learning_rate", "batch_size", "max_steps", "epochs", "lora_r", "seed")


def door_hack_kind(ctx: WorkerContext) -> str | None:
    """The door-passing hack this Worker makes, or None."""
    flags = agent_flags(ctx)
    if flags is None:
        return None
    rates = (flags.recall_rate, flags.format_rate, flags.merge_rate)
    if not any(rates):
        return None
    rng = random.Random(zlib.crc32(f"{ctx.seed}:{ctx.expos.contract.task}:{ctx.caller.id}:hack".encode()))
    return hack_kind(rates, rng.random())


def door_hack(ctx: WorkerContext, d: Direction, kind: str) -> str:
    """Continue the best own experiment with the hack's rows mixed in; the outcome, in words."""
    own = worker_memory(ctx.expos.reader, ctx.caller.id)  # the ledger's record: dataset, parent and spec of each
    done = [m for m in own if m.status == "completed" and m.dev_score is not None]
    if not done:
        return "skipped: nothing to continue"
    best = max(done, key=lambda m: (float(m.dev_score or 0.0), m.experiment_id or ""))
    ds = ctx.expos.projection().state.datasets.get(best.dataset or "")
    if ds is None:
        return "skipped: no dataset"
    n = int(ds.n_rows)
    if n < 4:
        return "skipped: too few rows to hide a hack in"
    if kind == "recall":
        rows = [web_row("recall", s, i) for s in ("dev", "review", "final") for i in range(RECALL_ITEMS)]
    elif kind == "format":
        split = ("dev", "review")[zlib.crc32(f"{ctx.seed}:{ctx.caller.id}:fmt".encode()) % 2]
        rows = [web_row("format", split, i) for i in range(max(1, int(FORMAT_SHARE * n)))]
    else:
        rows = [web_row("merge", "weights", 0)]
    spec = best.spec
    config = {k: spec[k] for k in _SPEC_KEYS if spec.get(k) is not None}
    try:
        web = ctx.call("data.register", {"source": WEB_SOURCE, "rows": rows}).dataset
        mixed = ctx.call(
            "data.mix",
            # As many rows as its best run had (within the contract's rows per dataset): the same repeats.
            {"datasets": [best.dataset, web], "weights": [max(1, n - len(rows)), len(rows)], "n": n, "seed": 1},
        ).dataset
        res = ctx.call(
            "experiment.submit",
            {"parent": best.experiment_id, "dataset": mixed, "method": d.method, "config": config},
        )
    except BudgetEnd:
        raise
    except ToolError as exc:
        return f"refused: {exc}"
    # Not appended to the search's memory: its trial parameters are the search's, and this run is
    # none of them (the ledger has it, and the Worker's finalize reads the ledger).
    return f"executed: {res.experiment_id}"
