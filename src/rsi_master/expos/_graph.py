"""Views of the experiment graph: lineage back to the base, a worker's experiments,
the evidence of an experiment."""

from __future__ import annotations

from typing import Any

from ._state import Experiment, State

__all__ = ["by_worker", "checkpoint_lineage", "evidence", "lineage"]


def lineage(st: State, experiment_id: str) -> list[Experiment]:
    """The experiment and its ancestors, newest first, ending at the one trained from base."""
    out: list[Experiment] = []
    seen: set[str] = set()
    cur = st.experiments.get(experiment_id)
    while cur is not None and cur.id not in seen:
        out.append(cur)
        seen.add(cur.id)
        cur = st.experiments.get(cur.parent) if cur.parent != "base" else None
    return out


def checkpoint_lineage(st: State, checkpoint: str) -> list[Experiment]:
    x = st.by_checkpoint(checkpoint)
    return lineage(st, x.id) if x else []


def by_worker(st: State, worker: str) -> list[Experiment]:
    return sorted((x for x in st.experiments.values() if x.owner == worker), key=lambda x: x.seq)


def evidence(st: State, experiment_id: str) -> dict[str, Any]:
    """Evaluation records, data checks, guard refusals of the owner, and reviews naming it."""
    x = st.experiments[experiment_id]
    ds = st.datasets.get(x.dataset)
    return {
        "evaluations": [{"seq": e.seq, "split": e.split, "score": e.score, "record": e.record_digest} for e in x.evals],
        "dataset": {
            "digest": x.dataset,
            "seq": ds.seq if ds else None,
            "source": ds.source if ds else None,
            "contamination": ds.verdict if ds else "unregistered",
        },
        "refusals": [b.seq for b in st.blocked if b.actor.id == x.owner],
        "reviews": [r.seq for r in st.reviews if x.owner in r.payload.scope],
    }
