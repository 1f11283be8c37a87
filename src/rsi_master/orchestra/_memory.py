"""Agent memory: a node's own earlier steps, rebuilt from the ledger.

An agent killed mid-run (SIGKILL included) comes back with the same memory it would
have had, because every step it took is an event: the datasets it made (with their
knob values), the experiments it started, how they ended and what they scored. Nothing
else is kept, so nothing is lost or replayed on resume.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..expos import RunReader

__all__ = ["Trial", "lineage_examples", "worker_memory"]


@dataclass
class Trial:
    """One trial of a Worker: the experiment it started (none when the trial was refused before
    one existed), how it ended and what it took. Rebuilt from the ledger on resume
    (`worker_memory`: with its training spec and dataset), or recorded by the Worker as it goes
    (`of_outcome`: with the batch size it trained at)."""

    experiment_id: str | None = None
    status: str = "refused"  # completed | failed | running | interrupted | refused
    dev_score: float | None = None
    parent: str | None = None
    steps: int | None = None
    seconds: float | None = None  # wall time to its dev evaluation: what the next trial costs
    train_seconds: float | None = None  # of which in the training loop, where the trial reported it
    batch_size: int | None = None
    spec: dict[str, Any] = field(default_factory=dict)  # its training parameters, as recorded
    dataset: str | None = None
    # Its dataset: the generator family, knob values (`params`), and a mix's inputs (`mixed`).
    data: dict[str, Any] = field(default_factory=dict)
    start_ts: float | None = None

    @classmethod
    def of_outcome(
        cls, outcome: dict[str, Any] | None, *, parent: str | None, seconds: float, batch_size: int
    ) -> Trial:
        """A trial as the Worker records it from its submit's result (None: refused or failed)."""
        o = outcome or {}
        return cls(
            experiment_id=o.get("experiment_id"),
            status=o.get("status", "refused"),
            dev_score=o.get("dev_score"),
            parent=parent,
            steps=o.get("steps"),
            seconds=seconds,
            train_seconds=o.get("train_seconds"),
            batch_size=batch_size,
        )

    @property
    def batch(self) -> int:
        """The batch size it trained at (its spec's where the Worker did not record one)."""
        return int(self.batch_size or self.spec.get("batch_size") or 8)

    @property
    def knob_values(self) -> dict[str, Any]:
        return dict(self.data.get("params", {}))


def worker_memory(
    reader: RunReader, worker_id: str, interrupted: set[str] | frozenset[str] = frozenset()
) -> list[Trial]:
    """One trial per experiment the Worker started: data knobs, training spec, outcome, wall time."""
    st = reader.projection().state
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
        m = Trial(
            experiment_id=x.id,
            dataset=x.dataset,
            parent=x.parent,
            spec=x.spec,
            data=data.get(x.dataset, {}),
            status=x.status,
            start_ts=x.start_ts,
        )
        if x.finish_ts is not None:
            m.steps, m.seconds, m.train_seconds = x.steps, x.finish_ts - x.start_ts, x.train_seconds
        m.dev_score = x.dev_score()  # an earlier identical checkpoint's, when it has none of its own
        for e in x.evals:
            if e.split == "dev":
                # Wall time of a trial includes its dev evaluation: that is what the next one costs.
                m.seconds = e.ts - x.start_ts
        if m.status == "running" and x.id in interrupted:
            m.status = "interrupted"
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
