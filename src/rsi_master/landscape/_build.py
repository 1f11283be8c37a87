"""The landscape file from the raw measurements: a curve's seeds averaged point by point,
the latest reference of a task kept, and the targets computed from the result."""

from __future__ import annotations

from collections.abc import Sequence

from ._model import Base, Curve, DefaultExperiment, Landscape, Point, Probe, Reference, TaskLandscape
from ._results import BaseRow, CurveRow, ProbeRow, ReferenceRow, Row
from ._targets import targets

__all__ = ["build", "mean_curve"]


def mean_curve(runs: Sequence[CurveRow]) -> Curve:
    """One curve from its seeds' runs: at each multiple the mean over the seeds that measured
    it (`seeds` says how many); tokens and seconds are the longest run's, whose horizon is
    the curve's last point (the Main's cost model divides by them)."""
    longest = max(runs, key=lambda r: max(p.multiple for p in r.points))
    by_m: dict[float, list[tuple[int | None, int | None, float]]] = {}
    for r in runs:
        for p in r.points:
            by_m.setdefault(p.multiple, []).append((p.step, p.examples, p.score))
    points = [
        Point(
            multiple=m,
            step=ps[0][0],
            examples=ps[0][1],
            score=round(sum(s for *_, s in ps) / len(ps), 4),
            seeds=len(ps),
            per_seed=[s for *_, s in ps],
        )
        for m, ps in sorted(by_m.items())
    ]
    return Curve(
        points=points,
        train_seconds=longest.train_seconds,
        tokens=longest.tokens,
        params=dict(longest.params),
        seeds=sorted(r.seed for r in runs),
    )


def build(rows: Sequence[Row], default: DefaultExperiment | None = None) -> Landscape:
    """The landscape the rows measured (rows later in the file win where two say the same)."""
    unit = default or DefaultExperiment()
    tasks: dict[str, TaskLandscape] = {}
    runs: dict[str, dict[str, list[CurveRow]]] = {}
    for r in rows:
        t = tasks.setdefault(r.task, TaskLandscape())
        if isinstance(r, BaseRow):
            b = t.base or Base()
            update = {f"score_{r.split}": r.score, "checkpoint_digest": r.checkpoint_digest}
            if r.split == "dev":
                update["score"] = r.score
            t.base = b.model_copy(update=update)
        elif isinstance(r, CurveRow):
            runs.setdefault(r.task, {}).setdefault(r.curve, []).append(r)
        elif isinstance(r, ProbeRow):
            t.probes.append(
                Probe(
                    family=r.family,
                    spec=r.spec,
                    examples=r.examples,
                    multiple=r.multiple,
                    steps=r.steps,
                    train_seconds=r.train_seconds,
                    tokens=r.tokens,
                    score=r.score,
                    parent=r.parent,
                )
            )
        elif isinstance(r, ReferenceRow):
            t.reference = Reference(
                score=r.scores["dev"],
                score_final=r.scores.get("final"),
                family=r.family,
                spec=r.spec,
                examples=r.examples,
                steps=r.steps,
                compute_multiple=r.examples / unit.examples,
                train_seconds=r.train_seconds,
                checkpoint_digest=r.checkpoint_digest,
            )
    for task, by_label in runs.items():
        tasks[task].curves = {label: mean_curve(recs) for label, recs in sorted(by_label.items())}
    landscape = Landscape(default_experiment=unit, tasks=dict(sorted(tasks.items())))
    landscape.targets = targets(landscape)
    return Landscape.model_validate(landscape.model_dump())
