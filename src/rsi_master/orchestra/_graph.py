"""The research graph, derived from the ledger alone.

Worker nodes come from `worker.add` events (task, direction, predecessors: the
Worker-to-Worker edges that carry context), Reviewer nodes from `review.request` events
(question and scope: the Worker-to-Reviewer edges). Finalizations, reviews, decisions
and the scheduler's job records complete the picture. Nothing here is stored anywhere
else, which is what lets `resume` rebuild a run after SIGKILL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..events import (
    DecisionRecord, OrchestraFinish, OrchestraInterrupted, OrchestraJobEnd, OrchestraJobStart, OrchestraResume,
    OrchestraStart, OrchestraStop, ReviewRequest, ReviewSubmit, TypedEvent, WorkerAdd, WorkerFinalize, typed,
)
from ._directions import Direction

if TYPE_CHECKING:
    from ..expos import ExpOS

__all__ = ["Decision", "Job", "ResearchGraph", "ReviewerNode", "WorkerNode", "load_graph", "parse_ts"]

ORCHESTRA = {"role": "harness", "id": "orchestra"}
# Kinds only the harness writes: a row of one of these kinds by anyone else is not the harness's.
HARNESS_KINDS = ("orchestra.", "harness.")


def parse_ts(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


@dataclass
class WorkerNode:
    id: str
    seq: int
    task: str
    direction: Direction
    predecessors: list[str]
    finalize_seq: int | None = None
    finalize: WorkerFinalize | None = None

    @property
    def done(self) -> bool:
        return self.finalize_seq is not None


@dataclass
class ReviewerNode:
    id: str
    seq: int
    question: str
    scope: list[str]
    report_seq: int | None = None
    report: ReviewSubmit | None = None

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


@dataclass
class Job:
    """One run of a node in a slot, from the scheduler's records."""

    node: str
    kind: str
    slot: int
    start_seq: int
    start_ts: float
    end_ts: float | None = None
    status: str | None = None


@dataclass
class ResearchGraph:
    workers: dict[str, WorkerNode] = field(default_factory=dict)
    reviewers: dict[str, ReviewerNode] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    # (seq, ts, payload) of each session: the run's start, then each resume
    sessions: list[tuple[int, float, OrchestraStart | OrchestraResume]] = field(default_factory=list)
    settings: OrchestraStart | None = None  # the run's settings (its orchestra.start)
    stopped: TypedEvent[OrchestraStop] | None = None
    finished: TypedEvent[OrchestraFinish] | None = None
    interrupted_experiments: set[str] = field(default_factory=set)
    last_ts: float = 0.0
    size: int = 0

    # -- views ---------------------------------------------------------------------------
    def edges(self) -> list[tuple[str, str, str]]:
        """(from, to, kind): `context` Worker->Worker, `scope` Worker->Reviewer."""
        out = [(p, w.id, "context") for w in self.workers.values() for p in w.predecessors]
        out += [(s, r.id, "scope") for r in self.reviewers.values() for s in r.scope]
        return out

    def pending(self) -> list[tuple[str, str]]:
        """Nodes added but not yet finished, oldest first: ("worker"|"reviewer", id)."""
        nodes = [(w.seq, "worker", w.id) for w in self.workers.values() if not w.done]
        nodes += [(r.seq, "reviewer", r.id) for r in self.reviewers.values() if not r.done]
        return [(k, i) for _, k, i in sorted(nodes)]

    def handled_events(self) -> set[int]:
        """Orchestration events the Main agent has already answered."""
        return {int(d.detail["event"]) for d in self.decisions if "event" in d.detail}

    def orchestration_events(self) -> list[tuple[int, str, str]]:
        """(seq, "finalize"|"review", node id) in ledger order."""
        ev = [(w.finalize_seq, "finalize", w.id) for w in self.workers.values() if w.finalize_seq is not None]
        ev += [(r.report_seq, "review", r.id) for r in self.reviewers.values() if r.report_seq is not None]
        return sorted(ev)  # type: ignore[arg-type]

    def open_jobs(self) -> list[Job]:
        return [j for j in self.jobs if j.end_ts is None]

    def spent_seconds(self, now: float | None = None) -> float:
        """Wall-clock budget used: each session from its start to its last event (or now).

        Time after a killed session's last event is not counted: the ledger cannot know it.
        """
        total = 0.0
        for i, (_seq, start, _p) in enumerate(self.sessions):
            if i + 1 < len(self.sessions):
                total += max(0.0, self._last_before(self.sessions[i + 1][0]) - start)
            else:
                total += max(0.0, (now if now is not None else self.last_ts) - start)
        return total

    def _last_before(self, seq: int) -> float:
        return self._ts_before.get(seq, self.last_ts)

    def direction_seconds(self) -> dict[str, float]:
        """Slot-seconds spent per direction key (finished and interrupted Worker jobs)."""
        out: dict[str, float] = {}
        for j in self.jobs:
            w = self.workers.get(j.node)
            if j.kind == "worker" and w is not None:
                end = j.end_ts if j.end_ts is not None else self.last_ts
                out[w.direction.key()] = out.get(w.direction.key(), 0.0) + max(0.0, end - j.start_ts)
        return out

    def verified_keys(self) -> set[str]:
        """Direction keys of Workers covered by a passing cross-Worker review."""
        out: set[str] = set()
        for r in self.reviewers.values():
            if r.done and r.cross_worker and r.report is not None and r.report.verdict == "pass":
                out |= {self.workers[w].direction.key() for w in r.scope if w in self.workers}
        return out

    # Filled by load_graph: for each session start, the timestamp of the event before it.
    _ts_before: dict[int, float] = field(default_factory=dict)


def load_graph(expos: "ExpOS") -> ResearchGraph:
    g = ResearchGraph()
    prev_ts = 0.0
    for e in expos.run.ledger.events():
        ts = parse_ts(e.ts)
        k = e.kind
        if k.startswith(HARNESS_KINDS) and e.actor.role != "harness":
            continue  # the harness reads its own records by author, never any event of the kind
        if k in _GRAPH_KINDS:
            _fold(g, typed(e), ts, prev_ts)
        prev_ts = ts
        g.size = e.seq + 1
    g.last_ts = prev_ts
    return g


_GRAPH_KINDS = frozenset({"worker.add", "worker.finalize", "review.request", "review.submit", "decision.record",
                          "orchestra.start", "orchestra.resume", "orchestra.job.start", "orchestra.job.end",
                          "orchestra.interrupted", "orchestra.stop", "orchestra.finish"})


def _fold(g: ResearchGraph, t: TypedEvent[Any], ts: float, prev_ts: float) -> None:
    p, seq, actor = t.payload, t.seq, t.actor.id
    if isinstance(p, WorkerAdd):
        g.workers[p.worker_id] = WorkerNode(p.worker_id, seq, p.task,
                                            Direction.model_validate(p.direction or {"family": "?"}),
                                            list(p.predecessors))
    elif isinstance(p, WorkerFinalize) and actor in g.workers:
        g.workers[actor].finalize_seq = seq
        g.workers[actor].finalize = p
    elif isinstance(p, ReviewRequest):
        g.reviewers[p.reviewer_id] = ReviewerNode(p.reviewer_id, seq, p.question, list(p.scope))
    elif isinstance(p, ReviewSubmit) and actor in g.reviewers:
        g.reviewers[actor].report_seq = seq
        g.reviewers[actor].report = p
    elif isinstance(p, DecisionRecord):
        g.decisions.append(Decision(seq, p.action, p.rationale, list(p.evidence), dict(p.detail)))
    elif isinstance(p, (OrchestraStart, OrchestraResume)):
        g._ts_before[seq] = prev_ts
        g.sessions.append((seq, ts, p))
        if isinstance(p, OrchestraStart) and g.settings is None:
            g.settings = p
    elif isinstance(p, OrchestraJobStart):
        g.jobs.append(Job(p.node, p.kind, p.slot, seq, ts))
    elif isinstance(p, OrchestraJobEnd):
        for j in g.jobs:
            if j.start_seq == p.start_seq:
                j.end_ts, j.status = float(p.end_ts), p.status
    elif isinstance(p, OrchestraInterrupted):
        g.interrupted_experiments |= set(p.experiments)
    elif isinstance(p, OrchestraStop):
        g.stopped = t
    elif isinstance(p, OrchestraFinish):
        g.finished = t
