"""What the harness's choice of the returned checkpoint loses, read from a simulated bench's campaigns.

    PYTHONPATH=src .venv/bin/python benchmarks/selection_loss.py DIR [DIR ...] [--configs a,b]

Every configuration returns the audit-unflagged submission with the best `review` score (the
harness's `harness.select`). A 50-item `review` score is a noisy measurement, so the returned
checkpoint need not be the best one submitted. For each campaign this reads every accepted
submission's stand-in checkpoint, computes its true `final` accuracy from the world the bench
generated (`SimWorld.accuracy`: no item noise, no `dev` gap; ground truth no agent can read) and
prints, per configuration, the mean normalised true `final` of the returned checkpoint and of the
best accepted one, and their difference: an upper bound on what any better choice among the
submitted candidates (a Reviewer measuring contenders on more items, a perfect one) could add
to the returned score. Measurement only; reads the run directories, writes nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from rsi_master.bench import CampaignStats, normalised
from rsi_master.events import HarnessSelect, typed
from rsi_master.expos import ExpOS
from rsi_master.runtime._sim import read_sim_checkpoint
from rsi_master.sim import GeneratorFlags, generate_world


def campaign(path: Path) -> tuple[str, int, float, float]:
    """(config, accepted submissions, normalised true final of the returned one, of the best one)."""
    stats = CampaignStats.model_validate_json((path / "stats.json").read_text())
    settings = json.loads((path.parent.parent / "settings.json").read_text())
    world = generate_world(stats.world_seed, GeneratorFlags.model_validate(settings["flags"]))
    with ExpOS.open(str(path / "run"), writable=False) as x:
        sel = typed(x.own_events("harness.select")[-1], HarnessSelect).payload
        truth = {}
        for r in sel.submissions:
            if r.accepted and r.checkpoint:
                ckpt, _ = read_sim_checkpoint(Path(x.run.store.path(r.checkpoint)))
                truth[r.experiment_id] = float(world.accuracy(ckpt, "final"))
    # Normalised as the bench normalises a campaign's final (no selection: the base model, 0).
    norm = lambda v: normalised(stats.model_copy(update={"final": v}))  # noqa: E731
    returned = truth.get(sel.selected, stats.base) if sel.selected else stats.base
    return stats.config, len(truth), norm(returned), norm(max(truth.values(), default=stats.base))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--configs", default=None, help="comma-separated; default: every config found")
    a = ap.parse_args()
    keep = set(a.configs.split(",")) if a.configs else None
    rows = defaultdict(list)
    for d in a.dirs:
        for p in sorted((d / "campaigns").iterdir()):
            if (p / "stats.json").is_file() and (keep is None or p.name.split("--")[0] in keep):
                config, n, got, best = campaign(p)
                rows[config].append((n, got, best))
    print(
        "| config | campaigns | accepted submissions per campaign | returned (true final) | best accepted | loss (95% CI) |"
    )
    print("|---|---|---|---|---|---|")
    for config, rs in sorted(rows.items()):
        loss = [b - g for _, g, b in rs]
        m = statistics.mean(loss)
        half = 1.96 * statistics.stdev(loss) / len(loss) ** 0.5 if len(loss) > 1 else float("nan")
        print(
            f"| {config} | {len(rs)} | {statistics.mean(n for n, _, _ in rs):.1f} "
            f"| {statistics.mean(g for _, g, _ in rs):.3f} | {statistics.mean(b for _, _, b in rs):.3f} "
            f"| {m:.3f} ({m - half:.3f}..{m + half:.3f}) |"
        )


if __name__ == "__main__":
    main()
