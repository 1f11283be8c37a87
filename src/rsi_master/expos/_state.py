"""State derived from the ledger alone: datasets, experiments, evaluations, workers.

Nothing here is stored anywhere else; every view is recomputed from events, so what an
agent or a reviewer sees is what the ledger says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..events import (
    CandidateNominate, Contamination, DataCheck, EvalRecord as EvalPayload, ExperimentFinish, ExperimentStart,
    GuardBlocked, ReviewSubmit, TypedEvent, WorkerAdd, WorkerFinalize, typed,
)

if TYPE_CHECKING:
    from ._session import ExpOS

__all__ = ["Dataset", "EvalRecord", "Experiment", "State", "experiment_id", "load_state"]


def experiment_id(seq: int) -> str:
    """Experiments are named by the sequence number of their start event: unique without coordination."""
    return f"exp-{seq:05d}"


@dataclass
class Dataset:
    digest: str
    seq: int
    owner: str
    op: str
    source: str
    n_rows: int
    contamination: Contamination
    inputs: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return self.contamination.verdict


@dataclass
class EvalRecord:
    seq: int
    experiment_id: str
    split: str
    score: float
    checkpoint_digest: str
    record_digest: str
    caller: str
    payload: EvalPayload  # the whole eval.record payload


@dataclass
class Experiment:
    id: str
    seq: int
    owner: str
    parent: str  # an experiment id or "base"
    parent_checkpoint: str
    dataset: str
    method: str
    spec: dict[str, Any]
    status: str = "running"
    checkpoint: str | None = None
    error: str | None = None
    finish_seq: int | None = None
    artifacts: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)  # finish event's output name -> digest
    measured: dict[str, str] = field(default_factory=dict)  # digests the runtime measured on the bytes it used
    # (finish payload's `measured`: parent_checkpoint, dataset; empty when it has none)
    evals: list[EvalRecord] = field(default_factory=list)

    def dev_score(self) -> float | None:
        dev = [e for e in self.evals if e.split == "dev"]
        return dev[0].score if dev else None


@dataclass
class State:
    datasets: dict[str, Dataset] = field(default_factory=dict)
    experiments: dict[str, Experiment] = field(default_factory=dict)
    workers: dict[str, WorkerAdd] = field(default_factory=dict)  # id -> worker.add payload
    finalized: dict[str, TypedEvent[WorkerFinalize]] = field(default_factory=dict)  # worker id -> its finalize
    # Experiments Workers put forward (the unit of the hacking rate): (id, worker, seq).
    submissions: list[tuple[str, str, int]] = field(default_factory=list)
    nominations: list[tuple[str, int]] = field(default_factory=list)  # Main's picks for the harness
    reviews: list[TypedEvent[ReviewSubmit]] = field(default_factory=list)
    blocked: list[TypedEvent[GuardBlocked]] = field(default_factory=list)

    def predecessors(self, worker: str) -> set[str]:
        """Workers whose results `worker` receives (transitively, through the research graph)."""
        out: set[str] = set()
        stack = list(self._predecessors_of(worker))
        while stack:
            w = stack.pop()
            if w not in out:
                out.add(w)
                stack.extend(self._predecessors_of(w))
        return out

    def _predecessors_of(self, worker: str) -> list[str]:
        w = self.workers.get(worker)
        return w.predecessors if w is not None else []

    def visible_to(self, worker: str) -> list[Experiment]:
        owners = {worker} | self.predecessors(worker)
        return [e for e in self.experiments.values() if e.owner in owners]

    def by_checkpoint(self, digest: str) -> Experiment | None:
        return next((e for e in self.experiments.values() if e.checkpoint == digest), None)


def load_state(expos: "ExpOS") -> State:
    st = State()
    for e in expos.run.ledger.events(kinds=("data.*", "experiment.*", "eval.record", "worker.*", "review.submit",
                                             "candidate.nominate", "guard.blocked")):
        p = (t := typed(e)).payload
        if e.kind.startswith("data.") and not isinstance(p, DataCheck):
            st.datasets[p.dataset] = Dataset(p.dataset, e.seq, e.actor.id, e.kind, p.source, p.n_rows,
                                             p.contamination, list(p.inputs))
        elif isinstance(p, ExperimentStart):
            st.experiments[experiment_id(e.seq)] = Experiment(
                experiment_id(e.seq), e.seq, e.actor.id, p.parent, p.parent_checkpoint, p.dataset, p.method,
                dict(p.spec))
        elif isinstance(p, ExperimentFinish) and p.experiment_id in st.experiments:
            x = st.experiments[p.experiment_id]
            x.status, x.checkpoint, x.error, x.finish_seq = p.status, p.checkpoint, p.error, e.seq
            x.artifacts = [r.digest for r in e.artifacts if r.role == "output"]
            x.outputs = {r.name: r.digest for r in e.artifacts if r.role == "output" and r.name}
            x.measured = p.measured.model_dump() if p.measured is not None else {}
        elif isinstance(p, EvalPayload):
            rec = EvalRecord(e.seq, p.experiment_id, p.split, p.score, p.checkpoint_digest, p.record_digest,
                             f"{e.actor.role}:{e.actor.id}", p)
            if rec.experiment_id in st.experiments:
                st.experiments[rec.experiment_id].evals.append(rec)
        elif isinstance(p, WorkerAdd):
            st.workers[p.worker_id] = p
        elif isinstance(p, WorkerFinalize):
            st.finalized[e.actor.id] = t
            st.submissions.extend((x, e.actor.id, e.seq) for x in p.candidates)
        elif isinstance(p, CandidateNominate):
            st.nominations.append((p.experiment_id, e.seq))
        elif isinstance(p, ReviewSubmit):
            st.reviews.append(t)
        elif isinstance(p, GuardBlocked):
            st.blocked.append(t)
    return st
