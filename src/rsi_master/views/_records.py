"""One record of a run as the report shows it, built from the projection's typed state, one record
at a time: `collect` builds every record with them, and a view that rebuilds only the records new
events touched can call the same builders."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..events import AgentStep, typed
from ..expos import AuditReport, Experiment, State, lineage
from ..expos import ReviewerNode as ReviewerRecord
from ..expos import WorkerRecord as WorkerRec
from ..ledger import Event
from ..orchestra import ResearchGraph
from ..rundir import RunReport
from ._model import (
    AuditView,
    BlockedView,
    CurvePoint,
    EvalView,
    ExperimentView,
    NodeView,
    ReviewView,
    StepView,
    ToolCallView,
    VerifyView,
)

__all__ = [
    "BudgetClock",
    "audit_view",
    "best_curves",
    "ended_nodes",
    "experiment_view",
    "lineage_curves",
    "named_nodes",
    "reviewer_view",
    "step_view",
    "verify_view",
    "worker_view",
]


class BudgetClock:
    """Budget seconds spent at a ledger timestamp: each session counts from its start, after the
    sessions before it (`ResearchGraph.spent_seconds` on the sessions up to that one)."""

    def __init__(self, graph: ResearchGraph) -> None:
        self._starts = [start for _seq, start, _p in graph.sessions]
        self._upto = [
            ResearchGraph(sessions=graph.sessions[: i + 1], _ts_before=graph._ts_before, last_ts=graph.last_ts)
            for i in range(len(graph.sessions))
        ]

    def at(self, ts: float) -> float:
        if not self._starts:
            return 0.0
        i = max(0, sum(1 for s in self._starts if s <= ts) - 1)
        return round(self._upto[i].spent_seconds(now=max(ts, self._starts[i])), 3)


def verify_view(r: RunReport) -> VerifyView:
    return VerifyView(
        ok=r.ok,
        events=r.ledger.events,
        checkpoints=r.ledger.checkpoints,
        unsigned_tail=r.unsigned_tail,
        artifacts=r.artifacts,
        root=r.ledger.root,
        head=r.ledger.head,
        witness=r.witness,
        problems=[str(p) for p in r.problems],
        notes=list(r.notes),
    )


def experiment_view(x: Experiment, st: State, clock: BudgetClock) -> ExperimentView:
    chain = lineage(st, x.id)
    return ExperimentView(
        id=x.id,
        owner=x.owner,
        status=x.status,
        method=x.method,
        parent=x.parent,
        lineage_root=chain[-1].id if chain else x.id,
        dataset=x.dataset,
        recipe=dict(x.spec),
        steps=x.steps,
        checkpoint=x.checkpoint,
        error=x.error,
        evals=[
            EvalView(seq=r.seq, split=r.split, score=r.score, at_s=clock.at(r.ts))
            for r in sorted(x.records(), key=lambda r: r.seq)
        ],
        start_s=clock.at(x.start_ts),
        finish_s=clock.at(x.finish_ts) if x.finish_ts is not None else None,
    )


def step_view(e: Event) -> StepView:
    p = typed(e, AgentStep).payload
    return StepView(
        seq=e.seq,
        episode=p.episode,
        index=p.index,
        content=p.content,
        tool_calls=[
            ToolCallView(name=c.name, arguments=c.arguments, status=c.status, error=c.error) for c in p.tool_calls
        ],
        tokens=p.prompt_tokens + p.completion_tokens,
    )


def worker_view(w: WorkerRec, experiments: list[ExperimentView], transcript: list[StepView]) -> NodeView:
    return NodeView(
        id=w.id,
        kind="worker",
        seq=w.seq,
        task=w.task,
        direction=w.direction,
        links=list(w.predecessors),
        done=w.done,
        summary=w.finalize.summary if w.finalize is not None else None,
        candidates=list(w.finalize.candidates) if w.finalize is not None else [],
        experiments=experiments,
        review=None,
        transcript=transcript,
    )


def reviewer_view(r: ReviewerRecord, experiments: list[ExperimentView], transcript: list[StepView]) -> NodeView:
    rep = r.report
    return NodeView(
        id=r.id,
        kind="reviewer",
        seq=r.seq,
        task=r.question,
        direction={},
        links=list(r.scope),
        done=r.done,
        summary=None,
        candidates=[],
        experiments=experiments,
        review=ReviewView(
            seq=r.report_seq or 0,
            verdict=str(rep.verdict),
            supported=list(rep.supported),
            uncertainties=list(rep.uncertainties),
            violations=list(rep.violations),
            regressions=list(rep.regressions),
            missing_comparisons=list(rep.missing_comparisons),
            recommendations=[c if isinstance(c, str) else c.model_dump_json() for c in rep.recommendations],
            evidence=list(rep.evidence),
        )
        if rep is not None
        else None,
        transcript=transcript,
    )


def named_nodes(
    detail: Mapping[str, object], answers: int | None, known: Mapping[str, object], ended: Mapping[int, str]
) -> list[str]:
    """Node ids a decision names: those in its structured detail (the nodes it added or scoped)
    and the node whose finish it answers; `known` holds every node id, `ended` maps an
    orchestration event to the node that finished."""
    found: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, str) and v in known and v not in found:
            found.append(v)
        elif isinstance(v, dict):
            for item in v.values():
                walk(item)
        elif isinstance(v, list | tuple):
            for item in v:
                walk(item)

    walk(detail)
    # The orchestration event it answered names the node that finished.
    node = ended.get(answers) if answers is not None else None
    if node is not None and node not in found:
        found.append(node)
    return found


def ended_nodes(workers: Iterable[WorkerRec], reviewers: Iterable[ReviewerRecord]) -> dict[int, str]:
    """Orchestration event -> the node whose finish it records."""
    out = {w.finalize_seq: w.id for w in workers if w.finalize_seq is not None}
    out.update({r.report_seq: r.id for r in reviewers if r.report_seq is not None})
    return out


def best_curves(experiments: Iterable[ExperimentView]) -> dict[str, list[CurvePoint]]:
    """Best-so-far score per split (dev, review) against the budget, one point per improvement."""
    out: dict[str, list[CurvePoint]] = {}
    xs = list(experiments)
    for split in ("dev", "review"):
        records = sorted((e.at_s, e.seq, e.score, x.id) for x in xs for e in x.evals if e.split == split)
        curve: list[CurvePoint] = []
        for at, _seq, score, xid in records:
            if not curve or score > curve[-1].score:
                curve.append(CurvePoint(at_s=at, score=score, experiment=xid))
        out[split] = curve
    return out


def lineage_curves(experiments: Iterable[ExperimentView]) -> dict[str, list[CurvePoint]]:
    """Each lineage's dev scores in the order they were recorded (a lineage: the experiments that
    continue, however far, from one experiment trained from the base model)."""
    out: dict[str, list[CurvePoint]] = {}
    for x in experiments:
        dev = next((e for e in x.evals if e.split == "dev"), None)
        if dev is not None:
            out.setdefault(x.lineage_root, []).append(CurvePoint(at_s=dev.at_s, score=dev.score, experiment=x.id))
    return {k: sorted(v, key=lambda p: p.at_s) for k, v in out.items()}


def audit_view(rep: AuditReport, st: State) -> AuditView:
    observations: dict[str, dict[str, int]] = {}
    for s in rep.submissions:
        for sub, f in s.observations.items():
            counts = observations.setdefault(sub, {})
            counts[f.observation.value] = counts.get(f.observation.value, 0) + 1
    return AuditView(
        submissions=len(rep.submissions),
        hacking_rate=rep.hacking_rate,
        interception_rate=rep.interception_rate,
        blocked_attempts=rep.blocked_attempts,
        executed_violations=rep.executed_violations,
        flagged=list(rep.flagged),
        run_dir_issues=list(rep.run_dir_issues),
        blocked_by_subcategory=dict(rep.blocked_by_subcategory),
        observations=observations,
        blocked=[
            BlockedView(
                seq=b.seq,
                actor=f"{b.actor.role}:{b.actor.id}",
                tool=b.payload.tool,
                subcategory=b.payload.subcategory,
                reason=b.payload.reason,
            )
            for b in st.blocked
        ],
    )
