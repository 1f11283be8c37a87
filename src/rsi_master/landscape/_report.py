"""The landscape in rows and tables: what each curve is expected to reach with a given amount of
training (as the Main reads it), and the markdown tables of docs/tasks.md."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._expect import expected_scores
from ._measure import parent_label
from ._model import Landscape
from ._targets import target_lines

__all__ = ["expected_rows", "markdown_lines"]


def expected_rows(landscape: Landscape, budgets: Sequence[float], tasks: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Per task and curve: the score expected after each of `budgets` seconds of one slot's
    training (None where the landscape has no estimate: a curve without tokens, or a batch-N
    curve past its horizon whose batch-8 curve reads instead), its horizon in default
    experiments, its seeds and its spread (the widest seed-to-seed difference at a point)."""
    rows = []
    for task in sorted(landscape.tasks):
        if tasks and task not in tasks:
            continue
        expected = [expected_scores(task, b, landscape) for b in budgets]
        for label, c in sorted(landscape.curves(task).items()):
            rows.append(
                {
                    "task": task,
                    "curve": label,
                    "expected": [e.get(label) for e in expected],
                    "horizon": c.horizon,
                    "seeds": len(c.seeds) or 1,
                    "spread": round(c.spread, 4),
                }
            )
    return rows


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def markdown_lines(landscape: Landscape) -> list[str]:
    """Base and reference scores, every curve's points, the probes and the targets, as the
    markdown tables docs/tasks.md quotes."""
    unit = landscape.default_experiment.examples
    out = ["| task | base (dev / final) | reference (dev / final) | reference recipe |", "| --- | --- | --- | --- |"]
    for name, t in sorted(landscape.tasks.items()):
        b, ref = t.base, t.reference
        rtxt = f"{_pct(ref.score)} / {_pct(ref.score_final)}" if ref else "-"
        recipe = (
            f"{ref.family}, batch {ref.spec.get('batch_size')}, lr {ref.spec.get('learning_rate')}, "
            f"{ref.examples} examples ({(ref.examples or 0) / unit:.0f}x), {ref.train_seconds or 0:.0f}s"
            if ref
            else "-"
        )
        out.append(
            f"| {name} | {_pct(b.score if b else None)} / {_pct(b.score_final if b else None)} | {rtxt} | {recipe} |"
        )
    out.append("")
    mults = sorted({p.multiple for t in landscape.tasks.values() for c in t.curves.values() for p in c.points})
    out.append("| task | family | " + " | ".join(f"x{m}" for m in mults) + " | train s |")
    out.append("| --- | --- | " + " | ".join("---" for _ in mults) + " | --- |")
    for name, t in sorted(landscape.tasks.items()):
        for fam, c in t.curves.items():
            cells = {p.multiple: _pct(p.score) + (f" ({p.seeds})" if p.seeds > 1 else "") for p in c.points}
            out.append(
                f"| {name} | {fam} | "
                + " | ".join(cells.get(m, "-") for m in mults)
                + f" | {c.train_seconds or 0:.0f} |"
            )
    out.append("")
    out.append("| task | family | recipe | data | steps | train s | score |")
    out.append("| --- | --- | --- | --- | --- | --- | --- |")
    for name, t in sorted(landscape.tasks.items()):
        for p in t.probes:
            sp = p.spec
            recipe = (
                f"{sp.get('method')}, batch {sp.get('batch_size')}, lr {sp.get('learning_rate')}, "
                f"{sp.get('lr_scheduler')}"
            )
            start = "base" if p.parent in (None, "base") else parent_label(p.parent)
            out.append(
                f"| {name} | {p.family} | {recipe}, from {start} | {p.examples} examples | {p.steps} "
                f"| {p.train_seconds or 0:.0f} | {_pct(p.score)} |"
            )
    if landscape.targets is not None:
        out.append("")
        out += target_lines(landscape.targets)
    return out
