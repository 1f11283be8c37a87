"""The run's own evidence as learning curves: what the Main plans with when it has no prior.

Every completed experiment with a `dev` score is a point (training examples behind its
checkpoint, score) of its Worker's direction (`Direction.key()`: continuations of a lineage
share their direction's key, so a lineage's points accumulate along it; a Worker whose claim
a review found beyond the noise of a fresh measurement has its points weighed less,
`reports.claim_weights`). `_curves.forecast` extrapolates each direction's points to the training one more Worker allowance adds, and the
Main allocates by expected gain: the expected improvement over the best verified score
(`Forecast.gain`), over every curve the evidence allows, so that a lineage that may still
turn (few points, or climbing) outbids a leader that has flattened, and one that has stayed
flat for long does not. An unexplored direction is valued as if it were one of the explored
ones trained that long from the base, with an uncertainty of its own (`UNSEEN_STD`): it opens
while the explored lineages promise little, and waits once one promises clearly more.
"""

from __future__ import annotations

import math
from typing import Any

from . import _reports as reports
from ._curves import Forecast, forecast
from ._directions import Direction
from ._graph import ResearchGraph
from ._job import run_timing
from ._memory import lineage_examples
from ._protocols import MainContext
from ._trial_timing import DEFAULT_EXAMPLE_S

__all__ = ["TRAINING_FRACTION", "UNSEEN_STD", "Evidence"]

UNSEEN_STD = 0.2  # spread of an untried direction beyond the explored ones (families differ widely)
# The part of a Worker's seconds that trains (the rest is process start, data generation and
# evaluation), used until the run has measured its own trials.
TRAINING_FRACTION = 0.5


class Evidence:
    """One read of the run: each direction's measured points and how fast this machine trains."""

    def __init__(self, ctx: MainContext, graph: ResearchGraph) -> None:

        expos = ctx.expos
        st = expos.projection().state
        key_of = {w.id: w.direction.key() for w in graph.workers.values()}
        self.trained: dict[str, tuple[str, dict[str, Any]]] = {
            x.id: (x.parent, x.spec if isinstance(x.spec, dict) else {}) for x in st.experiments.values()
        }
        # A Worker whose claim a review's fresh measurement contradicted: its points count less.
        weight = reports.claim_weights(graph)
        self.points: dict[str, list[tuple[float, float, float]]] = {}
        scores: list[float] = []
        for x in st.experiments.values():
            dev = x.dev_score()
            if x.status != "completed" or dev is None or not math.isfinite(dev) or x.owner not in key_of:
                continue
            self.points.setdefault(key_of[x.owner], []).append(
                (float(lineage_examples(self.trained, x.id)), dev, weight.get(x.owner, 1.0))
            )
            scores.append(float(dev))
        # The score before training: no run scores its base on `dev`, and its least-trained
        # checkpoints (the short measuring trials) are the closest measurement of it.
        self.floor = min(scores, default=0.0)
        samples = expos.contract.evaluator.sample_ids.get("dev") or []
        self.n_items = max(1, len(samples))
        timing = run_timing(expos.reader)
        self.example_s = float(timing.get("example_s", DEFAULT_EXAMPLE_S))
        self.ctx = ctx

    def examples_in(self, seconds: float) -> float:
        """Training examples a Worker's `seconds` buy on this machine."""
        return TRAINING_FRACTION * max(0.0, seconds) / self.example_s

    def outlook(self, d: Direction, behind: float, seconds: float) -> Forecast:
        """The direction's forecast `dev` score after `seconds` more of a Worker on top of a
        checkpoint with `behind` examples."""
        return forecast(
            self.points.get(d.key(), []),
            behind + self.examples_in(seconds),
            floor=self.floor,
            n_items=self.n_items,
        )

    def resolved(self, f: Forecast) -> float:
        """A forecast's mean at the resolution of a `dev` score (whole items): differences
        smaller than one item are no evidence, and leave a tie to the next rule."""
        return round(f.mean * self.n_items) / self.n_items

    def checkpoint_outlook(self, xid: str, d: Direction, seconds: float) -> Forecast:
        """`outlook` for a verified checkpoint: its lineage's examples, then `seconds` more."""
        return self.outlook(d, float(lineage_examples(self.trained, xid)), seconds)

    def unexplored(self, seconds: float, best: float) -> float:
        """The expected gain over `best` of a direction nobody has tried, trained `seconds` from
        the base: as if it were one of the explored directions (each one's forecast from the base
        at that training, averaged), with `UNSEEN_STD` more spread for being another direction.
        Infinite while nothing has been measured: then opening a direction is all there is to do."""
        at = self.examples_in(seconds)
        seen = [forecast(p, at, floor=self.floor, n_items=self.n_items) for p in self.points.values() if p]
        if not seen:
            return math.inf
        return sum(f.gain(best, widen=UNSEEN_STD) for f in seen) / len(seen)
