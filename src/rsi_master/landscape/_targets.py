"""The targets a landscape is held to, computed from its recorded figures only.

* base: at most 15% on every task;
* reference: at least 40 points above base;
* family gap: two families of a task at least 15 points apart at the same compute, on the
  means of their runs; curves are compared with curves measured at the same batch size only
  (`@bN`); a gap under `SINGLE_RUN_GAP` counts only where both curves have at least two runs
  at that point;
* crossing: a family that looks best early and then plateaus below another: ahead by at
  least 5 points (two standard errors of a difference of two 200-item scores near 10%) at
  some point of the first half of the shared horizon, at least 5 points behind at the last
  shared point, having gained less than the other over the second half; both differences
  settled as for the gap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._label import CurveLabel
from ._model import Crossing, FamilyGap, Targets, TaskLandscape, TaskTargets

if TYPE_CHECKING:
    from ._model import Landscape

__all__ = ["SINGLE_RUN_GAP", "target_lines", "targets"]

# Two runs of one curve on this model differ by up to 16.5 points at one multiple (more where
# a curve turns), so a single-run point settles only a gap wider than that by a margin.
SINGLE_RUN_GAP = 0.30


def _task_targets(t: TaskLandscape) -> TaskTargets:
    base = t.base.score if t.base else None
    ref = t.reference.score if t.reference else None
    gap: FamilyGap | None = None
    crossing: Crossing | None = None
    curves = {f: {p.multiple: p.score for p in c.points} for f, c in t.curves.items()}
    runs = {f: {p.multiple: p.seeds for p in c.points} for f, c in t.curves.items()}
    labels = {f: CurveLabel.parse(f) for f in t.curves}

    def settled(a: str, b: str, m: float, d: float) -> bool:
        """A difference one run cannot explain: wide, or both curves repeated at `m`."""
        return abs(d) >= SINGLE_RUN_GAP or min(runs[a][m], runs[b][m]) >= 2

    fams = sorted(curves)
    for i, a in enumerate(fams):
        for b in fams[i + 1 :]:
            if labels[a].batch != labels[b].batch:
                continue
            shared = sorted(set(curves[a]) & set(curves[b]))
            plain = not labels[a].knobs and not labels[b].knobs  # gaps: between families, not selections
            for m in shared if plain else []:
                d = abs(curves[a][m] - curves[b][m])
                if not settled(a, b, m, d):
                    continue
                if gap is None or 100 * d > gap.points:
                    hi, lo = (a, b) if curves[a][m] >= curves[b][m] else (b, a)
                    gap = FamilyGap(points=round(100 * d, 1), multiple=m, ahead=hi, behind=lo)
            if len(shared) < 3:
                continue
            last = shared[-1]
            early_pts = [m for m in shared if m <= last / 2]
            mid = max(early_pts) if early_pts else shared[0]
            for early, late in ((a, b), (b, a)):
                e, l_ = curves[early], curves[late]
                leads = [m for m in early_pts if settled(early, late, m, e[m] - l_[m])]
                lead = max(leads, key=lambda m: e[m] - l_[m], default=None)
                if (
                    lead is not None
                    and e[lead] >= l_[lead] + 0.05
                    and l_[last] >= e[last] + 0.05
                    and settled(early, late, last, l_[last] - e[last])
                    and (e[last] - e[mid]) < (l_[last] - l_[mid])
                ):
                    found = Crossing(
                        early_leader=early,
                        overtaken_by=late,
                        first=lead,
                        last=last,
                        scores={early: [e[lead], e[last]], late: [l_[lead], l_[last]]},
                    )
                    if crossing is None or (e[lead] - l_[lead]) > (
                        crossing.scores[crossing.early_leader][0] - crossing.scores[crossing.overtaken_by][0]
                    ):
                        crossing = found
    return TaskTargets(
        base_ok=base is not None and base <= 0.15,
        reference_gain_points=None if ref is None or base is None else round(100 * (ref - base), 1),
        reference_ok=ref is not None and base is not None and ref - base >= 0.40,
        family_gap=gap,
        family_gap_ok=gap is not None and gap.points >= 15,
        crossing=crossing,
    )


def targets(landscape: Landscape) -> Targets:
    per_task = {name: _task_targets(t) for name, t in sorted(landscape.tasks.items())}
    crossing = sorted(n for n, r in per_task.items() if r.crossing)
    return Targets(tasks=per_task, crossing_tasks=crossing, crossing_ok=len(crossing) >= 2)


def target_lines(res: Targets) -> list[str]:
    """The targets as a markdown table and a closing line (for docs/tasks.md)."""
    lines = [
        "| task | base <= 15% | reference >= base + 40 | families >= 15 points apart | early leader overtaken |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, r in res.tasks.items():
        gap = r.family_gap
        gtxt = (
            (
                f"{'met' if r.family_gap_ok else 'not met'}: {gap.ahead} {gap.points} points ahead of "
                f"{gap.behind} at x{gap.multiple}"
            )
            if gap
            else "fewer than two curves"
        )
        c = r.crossing
        ctxt = f"yes: {c.early_leader} leads at x{c.first}, {c.overtaken_by} ahead at x{c.last}" if c else "no"
        ref = r.reference_gain_points
        rtxt = "not measured" if ref is None else f"{'met' if r.reference_ok else 'not met'}: +{ref}"
        lines.append(f"| {name} | {'met' if r.base_ok else 'not met'} | {rtxt} | {gtxt} | {ctxt} |")
    lines.append(
        f"crossing on >= 2 tasks: {'met' if res.crossing_ok else 'not met'} ({', '.join(res.crossing_tasks) or 'none'})"
    )
    return lines
