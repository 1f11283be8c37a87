"""The research graph, derived from the ledger alone.

Worker nodes come from `worker.add` events (task, direction, predecessors: the
Worker-to-Worker edges that carry context), Reviewer nodes from `review.request` events
(question and scope: the Worker-to-Reviewer edges). Finalizations, reviews, decisions
and the scheduler's job records complete the picture. Nothing here is stored anywhere
else, which is what lets `resume` rebuild a run after SIGKILL.

Where it is folded: the nodes and decisions come from ExpOS tools, so ExpOS's projection
folds them (expos sits below orchestra and cannot know orchestra's records); the
scheduler's own records (`orchestra.*`) are folded by `OrchestraPart`, which this module
registers with the projection. A `ResearchGraph` is a snapshot of both for an agent to
read (and, for the Main, to extend while it decides): the live state is never handed out.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from .. import events as ev
from ..events import TypedEvent, payload_model, payload_of, with_payload
from ..expos import Decision, Projection, ReviewerNode, WorkerRecord, parse_ts, register_part
from ._directions import Direction

if TYPE_CHECKING:
    from ..expos import RunReader
    from ..ledger import Event

__all__ = [
    "Decision",
    "Job",
    "OrchestraEvent",
    "OrchestraPart",
    "ResearchGraph",
    "ReviewerNode",
    "WorkerNode",
    "load_graph",
    "parse_ts",
    "snapshot",
]

ORCHESTRA = {"role": "harness", "id": "orchestra"}
# Kinds only the harness writes: a row of one of these kinds by anyone else is not the harness's.
HARNESS_KINDS = ("orchestra.", "harness.")
Session = ev.OrchestraStart | ev.OrchestraResume


class OrchestraEvent(NamedTuple):
    """An event the Main answers with a decision: a Worker finalized or a Reviewer reported."""

    seq: int
    kind: str  # finalize | review
    node: str  # the Worker's or Reviewer's id


@dataclass
class WorkerNode:
    id: str
    seq: int
    task: str
    direction: Direction
    predecessors: list[str]
    finalize_seq: int | None = None
    finalize: ev.WorkerFinalize | None = None

    @property
    def done(self) -> bool:
        return self.finalize_seq is not None


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
    deadline: float | None = None  # by when the scheduler asked it to finish


@register_part
class OrchestraPart:
    """The scheduler's records, folded as they come: sessions, jobs, stop, finish, interruptions."""

    KINDS: ClassVar[frozenset[str]] = frozenset(
        {
            "orchestra.start",
            "orchestra.resume",
            "orchestra.job.start",
            "orchestra.job.end",
            "orchestra.interrupted",
            "orchestra.abandon",
            "orchestra.stop",
            "orchestra.finish",
        }
    )

    def __init__(self) -> None:
        self.sessions: list[tuple[int, float, Session]] = []  # (seq, ts, payload)
        self.ts_before: dict[int, float] = {}  # session start seq -> timestamp of the event before it
        self.jobs: list[Job] = []
        self.open_jobs: dict[int, Job] = {}  # start seq -> job not yet ended
        self.settings: ev.OrchestraStart | None = None  # the run's settings (its orchestra.start)
        self.stopped: TypedEvent[ev.OrchestraStop] | None = None
        self.finished: TypedEvent[ev.OrchestraFinish] | None = None
        self.interrupted: set[str] = set()
        self.abandoned: set[str] = set()
        self._directions: dict[tuple[str, int], Direction] = {}

    def fold(self, e: Event, prev_ts: str) -> None:
        if e.actor.role != "harness":
            return  # the harness reads its own records by author, never any event of the kind
        match payload_of(e, payload_model(e.kind)):
            case ev.OrchestraStart() | ev.OrchestraResume() as p:
                self.ts_before[e.seq] = parse_ts(prev_ts)
                self.sessions.append((e.seq, parse_ts(e.ts), p))
                if isinstance(p, ev.OrchestraStart) and self.settings is None:
                    self.settings = p
            case ev.OrchestraJobStart() as p:
                job = Job(p.node, p.kind, p.slot, e.seq, parse_ts(e.ts), deadline=p.deadline)
                self.jobs.append(job)
                self.open_jobs[e.seq] = job
            case ev.OrchestraJobEnd() as p:
                ended = self.open_jobs.pop(p.start_seq, None) or next(
                    (j for j in self.jobs if j.start_seq == p.start_seq), None
                )
                if ended is not None:
                    ended.end_ts, ended.status = float(p.end_ts), p.status
            case ev.OrchestraInterrupted() as p:
                self.interrupted |= set(p.experiments)
            case ev.OrchestraAbandon() as p:
                self.abandoned.add(p.node)
            case ev.OrchestraStop() as p:
                self.stopped = with_payload(e, p)
            case ev.OrchestraFinish() as p:
                self.finished = with_payload(e, p)

    def direction(self, node: WorkerRecord) -> Direction:
        """A Worker's direction as orchestra reads it (validated once per node)."""
        key = (node.id, node.seq)
        d = self._directions.get(key)
        if d is None:
            d = self._directions[key] = Direction.model_validate(node.direction or {"family": "?"})
        return d


@dataclass
class ResearchGraph:
    workers: dict[str, WorkerNode] = field(default_factory=dict)
    reviewers: dict[str, ReviewerNode] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    # (seq, ts, payload) of each session: the run's start, then each resume
    sessions: list[tuple[int, float, Session]] = field(default_factory=list)
    settings: ev.OrchestraStart | None = None  # the run's settings (its orchestra.start)
    stopped: TypedEvent[ev.OrchestraStop] | None = None
    finished: TypedEvent[ev.OrchestraFinish] | None = None
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
        return {d.answers for d in self.decisions if d.answers is not None}

    def orchestration_events(self) -> list[OrchestraEvent]:
        """Every finalize and review report, in ledger order."""
        ev = [
            OrchestraEvent(w.finalize_seq, "finalize", w.id)
            for w in self.workers.values()
            if w.finalize_seq is not None
        ]
        ev += [
            OrchestraEvent(r.report_seq, "review", r.id) for r in self.reviewers.values() if r.report_seq is not None
        ]
        return sorted(ev)

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

    # For each session start, the timestamp of the event before it.
    _ts_before: dict[int, float] = field(default_factory=dict)


def snapshot(proj: Projection) -> ResearchGraph:
    """The research graph as the projection has it now, in objects of the reader's own: a Main
    may add the nodes it just recorded to it without touching the session's state."""
    st, orc = proj.state, proj.part(OrchestraPart)
    return ResearchGraph(
        workers={
            w.id: WorkerNode(w.id, w.seq, w.task, orc.direction(w), list(w.predecessors), w.finalize_seq, w.finalize)
            for w in st.workers.values()
        },
        reviewers={r.id: replace(r, scope=list(r.scope)) for r in st.reviewers.values()},
        decisions=list(st.decisions),
        jobs=[replace(j) for j in orc.jobs],
        sessions=list(orc.sessions),
        settings=orc.settings,
        stopped=orc.stopped,
        finished=orc.finished,
        interrupted_experiments=set(orc.interrupted),
        last_ts=proj.last_ts,
        size=proj.size,
        _ts_before=dict(orc.ts_before),
    )


def load_graph(reader: RunReader) -> ResearchGraph:
    """The research graph up to the ledger's last event (the session's projection, advanced)."""
    return snapshot(reader.projection())
