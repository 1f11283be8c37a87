"""The live view's score curves kept up to date experiment by experiment: best-so-far per split
against the budget, and each lineage's dev scores, as `_records.best_curves` and
`_records.lineage_curves` draw them from every experiment at once."""

from __future__ import annotations

import bisect

from ._model import CurvePoint, EvalView, ExperimentView

__all__ = ["Curves"]

SPLITS = ("dev", "review")


class Curves:
    """Each split's evaluations in (time, seq) order with its best-so-far curve, and each
    lineage's points in (time, experiment start) order."""

    def __init__(self) -> None:
        self.evals: dict[str, list[tuple[float, int, float, str]]] = {s: [] for s in SPLITS}
        self.best: dict[str, list[CurvePoint]] = {s: [] for s in SPLITS}
        self.lineages: dict[str, list[tuple[float, int, CurvePoint]]] = {}

    def take(self, old: ExperimentView | None, new: ExperimentView, xseq: int) -> None:
        """One experiment rebuilt: `old` its record before (None when new), `new` after."""
        before = {e.seq for e in old.evals} if old is not None else set()
        after = {e.seq for e in new.evals}
        for split in SPLITS:
            records, known = self.evals[split], before
            if old is not None and any(e.split == split and e.seq not in after for e in old.evals):
                # A record of the same bytes gave way to the experiment's own: its records anew.
                records[:] = [r for r in records if r[3] != new.id]
                known = set()
                self._best_anew(split)
            added = [(e.at_s, e.seq, e.score, new.id) for e in new.evals if e.split == split and e.seq not in known]
            for rec in sorted(added):
                at_end = not records or rec >= records[-1]
                bisect.insort(records, rec)
                curve = self.best[split]
                if not at_end:
                    self._best_anew(split)
                elif not curve or rec[2] > curve[-1].score:
                    curve.append(CurvePoint(at_s=rec[0], score=rec[2], experiment=rec[3]))
        old_dev = _first_dev(old) if old is not None else None
        new_dev = _first_dev(new)
        if old_dev != new_dev:
            points = self.lineages.setdefault(new.lineage_root, [])
            if old_dev is not None:
                points[:] = [p for p in points if p[2].experiment != new.id]
            if new_dev is not None:
                point = CurvePoint(at_s=new_dev.at_s, score=new_dev.score, experiment=new.id)
                bisect.insort(points, (new_dev.at_s, xseq, point), key=lambda p: (p[0], p[1]))
            if not points:
                del self.lineages[new.lineage_root]

    def best_curves(self) -> dict[str, list[CurvePoint]]:
        return {s: list(c) for s, c in self.best.items()}

    def lineage_curves(self) -> dict[str, list[CurvePoint]]:
        return {root: [p for _at, _seq, p in pts] for root, pts in self.lineages.items()}

    def _best_anew(self, split: str) -> None:
        curve: list[CurvePoint] = []
        for at, _seq, score, xid in self.evals[split]:
            if not curve or score > curve[-1].score:
                curve.append(CurvePoint(at_s=at, score=score, experiment=xid))
        self.best[split] = curve


def _first_dev(x: ExperimentView) -> EvalView | None:
    return next((e for e in x.evals if e.split == "dev"), None)
