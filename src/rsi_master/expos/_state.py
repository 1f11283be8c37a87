"""State derived from the ledger alone: datasets, experiments, evaluations, workers, the
research graph's nodes and decisions, and what the audit reads (submissions, refusals).

Nothing here is stored anywhere else: the session's `Projection` folds it from the events
(once, then from the new ones), so what an agent or a reviewer sees is what the ledger says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import events as ev
from ..events import TypedEvent

__all__ = [
    "Dataset",
    "Decision",
    "EvalRecord",
    "Experiment",
    "ReviewerNode",
    "State",
    "WorkerRecord",
    "experiment_id",
]


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
    contamination: ev.Contamination
    inputs: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    role: str = "worker"

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
    payload: ev.EvalRecord  # the whole eval.record payload
    ts: float = 0.0


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
    evals: list[EvalRecord] = field(default_factory=list)
    role: str = "worker"
    start_ts: float = 0.0
    finish_ts: float | None = None
    steps: int | None = None
    train_seconds: float | None = None
    # The earlier experiment whose checkpoint has the same digest (its evaluations are this one's).
    same_checkpoint_as: str | None = None

    # Records other experiments' evaluations made of the same checkpoint bytes.
    shared: list[EvalRecord] = field(default_factory=list)

    def records(self) -> list[EvalRecord]:
        """What this checkpoint scored: the experiment's own evaluations (`evals`, the ledger's
        facts about it) and, on a split it has none of its own, the first record of the same bytes
        made for another experiment (an evaluation scores bytes: it is not made twice)."""
        own = {e.split for e in self.evals}
        out = list(self.evals)
        for e in self.shared:
            if e.split not in own:
                own.add(e.split)
                out.append(e)
        return out

    def dev_score(self) -> float | None:
        dev = [e for e in self.records() if e.split == "dev"]
        return dev[0].score if dev else None


@dataclass
class WorkerRecord:
    """A Worker node of the research graph (`worker.add`), and its finalization once recorded."""

    id: str
    seq: int
    task: str
    direction: dict[str, Any]
    predecessors: list[str]
    finalize_seq: int | None = None
    finalize: ev.WorkerFinalize | None = None

    @property
    def done(self) -> bool:
        return self.finalize_seq is not None


@dataclass
class ReviewerNode:
    """A Reviewer node (`review.request`: a question and a scope of Workers), and its report."""

    id: str
    seq: int
    question: str
    scope: list[str]
    report_seq: int | None = None
    report: ev.ReviewSubmit | None = None

    @property
    def done(self) -> bool:
        return self.report_seq is not None

    @property
    def cross_worker(self) -> bool:
        return len(set(self.scope)) >= 2


@dataclass
class Decision:
    seq: int
    action: str
    rationale: str
    evidence: list[int]
    detail: dict[str, Any]
    answers: int | None = None  # the event the decision answers (a finished node's, a review's)


@dataclass
class State:
    datasets: dict[str, Dataset] = field(default_factory=dict)
    experiments: dict[str, Experiment] = field(default_factory=dict)
    workers: dict[str, WorkerRecord] = field(default_factory=dict)
    reviewers: dict[str, ReviewerNode] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    finalized: dict[str, TypedEvent[ev.WorkerFinalize]] = field(default_factory=dict)  # worker id -> its finalize
    # Experiments Workers put forward (the unit of the hacking rate): (id, worker, seq).
    submissions: list[tuple[str, str, int]] = field(default_factory=list)
    nominations: list[tuple[str, int]] = field(default_factory=list)  # Main's picks for the harness
    reviews: list[TypedEvent[ev.ReviewSubmit]] = field(default_factory=list)
    blocked: list[TypedEvent[ev.GuardBlocked]] = field(default_factory=list)
    # Kept as the events come, so that a poll asks "what is new" without a pass over the graph.
    pending: dict[str, tuple[int, str]] = field(default_factory=dict)  # node id -> (seq, "worker"|"reviewer")
    unanswered: dict[int, tuple[int, str, str]] = field(default_factory=dict)  # orchestration events, no decision
    handled: set[int] = field(default_factory=set)  # orchestration events a decision answered
    n_edges: int = 0
    checkpoints: dict[str, list[str]] = field(default_factory=dict)  # checkpoint digest -> experiments ending there

    def predecessors(self, worker: str) -> set[str]:
        """Workers whose results `worker` receives (transitively, through the research graph)."""
        out: set[str] = set()
        node = self.workers.get(worker)
        stack = list(node.predecessors) if node else []
        while stack:
            w = stack.pop()
            if w not in out:
                out.add(w)
                node = self.workers.get(w)
                stack.extend(node.predecessors if node else [])
        return out

    def visible_to(self, worker: str) -> list[Experiment]:
        owners = {worker} | self.predecessors(worker)
        return [e for e in self.experiments.values() if e.owner in owners]

    def by_checkpoint(self, digest: str) -> Experiment | None:
        """The first experiment that ended with this checkpoint."""
        ids = self.checkpoints.get(digest)
        return self.experiments[ids[0]] if ids else None
