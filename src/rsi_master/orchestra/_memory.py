"""Agent memory: a node's own earlier steps, rebuilt from the ledger.

An agent killed mid-run (SIGKILL included) comes back with the same memory it would
have had, because every step it took is an event: the datasets it made (with their
knob values), the experiments it started, how they ended and what they scored. Nothing
else is kept, so nothing is lost or replayed on resume.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..expos import ExpOS

__all__ = ["lineage_examples", "worker_memory"]


def worker_memory(
    expos: ExpOS, worker_id: str, interrupted: set[str] | frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """One entry per experiment the Worker started: data knobs, training spec, outcome, wall time."""
    st = expos.projection().state
    data: dict[str, dict[str, Any]] = {}
    for ds in sorted(st.datasets.values(), key=lambda d: d.seq):
        if ds.owner != worker_id or ds.role != "worker":
            continue
        if ds.op in ("data.generate", "data.sample"):
            data[ds.digest] = {"family": ds.source.split("/", 1)[-1], "params": ds.params}
        elif ds.op == "data.mix":
            # A mix is described by its first input: the Worker's own family.
            first = data.get(ds.inputs[0], {}) if ds.inputs else {}
            data[ds.digest] = {**first, "mixed": ds.inputs}
    out = []
    for x in st.experiments.values():
        if x.owner != worker_id or x.role != "worker":
            continue
        m: dict[str, Any] = {
            "experiment_id": x.id,
            "dataset": x.dataset,
            "parent": x.parent,
            "spec": x.spec,
            "data": data.get(x.dataset, {}),
            "status": x.status,
            "start_ts": x.start_ts,
            "seconds": None,
            "dev_score": None,
            "steps": None,
        }
        if x.finish_ts is not None:
            m.update(steps=x.steps, seconds=x.finish_ts - x.start_ts, train_seconds=x.train_seconds)
        m["dev_score"] = x.dev_score()  # an earlier identical checkpoint's, when it has none of its own
        for e in x.evals:
            if e.split == "dev":
                # Wall time of a trial includes its dev evaluation: that is what the next one costs.
                m["seconds"] = e.ts - x.start_ts
        if m["status"] == "running" and x.id in interrupted:
            m["status"] = "interrupted"
        out.append(m)
    return out


def lineage_examples(experiments: Mapping[str, tuple[str, Mapping[str, Any]]], xid: str) -> int:
    """Training examples behind an experiment's checkpoint: its own steps times batch size,
    plus its ancestors' back to the base model (as far as `experiments`, id -> (parent,
    spec), reaches). Where scores tie, and in this landscape they tie at zero until a
    lineage has seen about a default experiment of data, the checkpoint with more training
    behind it is the one to build on."""
    total, seen = 0, set()
    while xid in experiments and xid not in seen:
        seen.add(xid)
        parent, spec = experiments[xid]
        steps, batch = spec.get("max_steps"), spec.get("batch_size")
        if isinstance(steps, int) and isinstance(batch, int):
            total += steps * batch
        xid = parent
    return total
