"""Agent memory: a node's own earlier steps, rebuilt from the ledger.

An agent killed mid-run (SIGKILL included) comes back with the same memory it would
have had, because every step it took is an event: the datasets it made (with their
knob values), the experiments it started, how they ended and what they scored. Nothing
else is kept, so nothing is lost or replayed on resume.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..events import DataGenerate, DataMix, EvalRecord, ExperimentFinish, ExperimentStart, typed
from ._graph import parse_ts

if TYPE_CHECKING:
    from ..expos import ExpOS

__all__ = ["lineage_examples", "worker_memory"]


_MEMORY_KINDS = frozenset({"data.generate", "data.mix", "experiment.start", "experiment.finish", "eval.record"})


def worker_memory(expos: "ExpOS", worker_id: str,
                  interrupted: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """One entry per experiment the Worker started: data knobs, training spec, outcome, wall time."""
    from ..expos._state import experiment_id

    data: dict[str, dict[str, Any]] = {}
    exps: dict[str, dict[str, Any]] = {}
    for e in expos.run.ledger.events(actor_id=worker_id):
        if e.actor.role != "worker" or e.kind not in _MEMORY_KINDS:
            continue
        p = typed(e).payload
        if isinstance(p, DataGenerate):
            data[p.dataset] = {"family": p.source.split("/", 1)[-1], "params": dict(p.params)}
        elif isinstance(p, DataMix):
            # A mix is described by its first input: the Worker's own family.
            first = data.get(p.inputs[0], {}) if p.inputs else {}
            data[p.dataset] = {**first, "mixed": list(p.inputs)}
        elif isinstance(p, ExperimentStart):
            xid = experiment_id(e.seq)
            exps[xid] = {"experiment_id": xid, "dataset": p.dataset, "parent": p.parent,
                         "spec": dict(p.spec), "data": data.get(p.dataset, {}), "status": "running",
                         "start_ts": parse_ts(e.ts), "seconds": None, "dev_score": None, "steps": None}
        elif isinstance(p, ExperimentFinish) and p.experiment_id in exps:
            x = exps[p.experiment_id]
            x.update(status=p.status, steps=p.steps, seconds=parse_ts(e.ts) - x["start_ts"],
                     train_seconds=p.train_seconds)
        elif isinstance(p, EvalRecord) and p.split == "dev" and p.experiment_id in exps:
            x = exps[p.experiment_id]
            x["dev_score"] = p.score
            # Wall time of a trial includes its dev evaluation: that is what the next one costs.
            x["seconds"] = parse_ts(e.ts) - x["start_ts"]
    for x in exps.values():
        if x["status"] == "running" and x["experiment_id"] in interrupted:
            x["status"] = "interrupted"
    return list(exps.values())


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
