"""Read one run into a `RunView`: `verify`, the session's projection (state and research graph),
the audit and the run's metrics, each through its own reader; nothing re-parses the ledger.

A run that does not verify is still read as far as the readers go: verify's problems come first,
and a reader that refuses (a rewritten history, an unreadable contract) adds its refusal to them
instead of ending the report."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import NotARunError, RsiMasterError
from ..events import AgentStep, typed
from ..expos import AuditReport, ExpOS, State, audit, boundary_statement, lineage, load_state, parse_ts
from ..orchestra import ResearchGraph, load_graph, run_metrics
from ..rundir import RunReport, VerifyMemo, verify_run
from ._model import (
    AuditView,
    BlockedView,
    CurvePoint,
    DecisionView,
    EvalView,
    ExperimentView,
    JobView,
    NodeView,
    ReviewView,
    RunView,
    StepView,
    ToolCallView,
    VerifyView,
)

__all__ = ["collect", "collect_open"]


class BudgetClock:
    """Budget seconds spent at a ledger timestamp: each session counts from its start, after the
    sessions before it (`ResearchGraph.spent_seconds` on the sessions up to that one)."""

    def __init__(self, graph: ResearchGraph) -> None:
        self._starts = [start for _seq, start, _p in graph.sessions]
        self._upto = [replace(graph, sessions=graph.sessions[: i + 1]) for i in range(len(graph.sessions))]

    def at(self, ts: float) -> float:
        if not self._starts:
            return 0.0
        i = max(0, sum(1 for s in self._starts if s <= ts) - 1)
        return round(self._upto[i].spent_seconds(now=max(ts, self._starts[i])), 3)


def collect(run_dir: str | Path, key_dir: str | None = None) -> RunView:
    """The report's view of `run_dir` (NotARunError when it is no run directory at all)."""
    path = Path(run_dir)
    report = verify_run(path, key_dir=key_dir)  # raises NotARunError for a path that is no run
    problems = [str(p) for p in report.problems]
    try:
        with ExpOS.open(path, key_dir=key_dir, writable=False) as expos:
            return _read(expos, path, report, problems)
    except NotARunError:
        raise
    except RsiMasterError as exc:
        return _unreadable(path, report, [*problems, f"the run could not be read: {exc}"])


def collect_open(expos: ExpOS, key_dir: str | None, memo: VerifyMemo) -> RunView:
    """The view of a run whose read-only session a caller keeps open (the live view): its projection
    takes in only the events since the last call, and verify re-checks only what changed (`memo`)."""
    path = Path(expos.run.path)
    report = verify_run(path, key_dir=key_dir, memo=memo)
    return _read(expos, path, report, [str(p) for p in report.problems])


def _verify_view(r: RunReport) -> VerifyView:
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


def _unreadable(path: Path, report: RunReport, problems: list[str]) -> RunView:
    return RunView(
        run_dir=str(path),
        run_id=report.run_id,
        problems=problems,
        verify=_verify_view(report),
        task=None,
        backend=None,
        base_model=None,
        model=None,
        agents={},
        budget_s=None,
        spent_s=None,
        slots=None,
        finished=False,
        summary={},
        trust_boundary=boundary_statement(),
        nodes=[],
        edges=[],
        decisions=[],
        main_transcript=[],
        best={},
        lineages={},
        jobs=[],
        tool_calls_by_fifth=[],
        audit=None,
        selected=None,
        selected_lineage=[],
    )


def _read(expos: ExpOS, path: Path, report: RunReport, problems: list[str]) -> RunView:
    st = load_state(expos)
    graph = load_graph(expos)
    unreadable = expos.projection().unreadable
    if unreadable:
        problems.append(f"{len(unreadable)} events could not be read and are left out (first: event {unreadable[0]})")
    clock = BudgetClock(graph)
    experiments = _experiments(st, clock)
    summary = _stored_summary(expos, graph)
    transcripts = _transcripts(expos)
    try:
        rep: AuditReport | None = audit(expos)
    except RsiMasterError as exc:  # e.g. the seal secret is not in this key directory
        rep = None
        problems.append(f"the audit could not run: {exc}")
    metrics = run_metrics(expos, graph)
    selected = summary.get("selected") if isinstance(summary.get("selected"), str) else None
    settings = graph.settings
    source = expos.contract.base_model_source
    return RunView(
        run_dir=str(path),
        run_id=report.run_id,
        problems=problems,
        verify=_verify_view(report),
        task=expos.contract.task,
        backend=expos.backend.name,
        base_model=expos.contract.base_model_artifact,
        model=(source.repo_id or source.spec) if source is not None else "shipped",
        agents={"main": settings.main, "worker": settings.worker, "reviewer": settings.reviewer} if settings else {},
        budget_s=settings.budget_s if settings else None,
        spent_s=round(graph.spent_seconds(), 3) if graph.sessions else None,
        slots=settings.slots if settings else None,
        finished=graph.finished is not None,
        summary=summary,
        trust_boundary=str(summary.get("trust_boundary") or boundary_statement()),
        nodes=_nodes(st, graph, experiments, transcripts),
        edges=graph.edges(),
        decisions=[
            DecisionView(
                seq=d.seq,
                action=d.action,
                rationale=d.rationale,
                evidence=list(d.evidence),
                nodes=_named_nodes(d.detail, graph),
                at_s=clock.at(_ts_of(expos, d.seq)),
            )
            for d in graph.decisions
        ],
        main_transcript=[s for actor, steps in transcripts.items() if actor == "main" for s in steps],
        best=_best(experiments),
        lineages=_lineages(experiments),
        jobs=[
            JobView(
                node=j.node,
                kind=j.kind,
                slot=j.slot,
                start_s=clock.at(j.start_ts),
                end_s=clock.at(j.end_ts if j.end_ts is not None else graph.last_ts),
                status=j.status,
            )
            for j in graph.jobs
        ],
        tool_calls_by_fifth=list(metrics["tool_calls_by_fifth"]),
        audit=_audit_view(rep, st) if rep is not None else None,
        selected=selected,
        selected_lineage=[experiments[x.id] for x in lineage(st, selected)] if selected else [],
    )


def _ts_of(expos: ExpOS, seq: int) -> float:
    e = next(iter(expos.run.ledger.events(since=seq, limit=1)), None)
    return parse_ts(e.ts) if e is not None else 0.0


def _experiments(st: State, clock: BudgetClock) -> dict[str, ExperimentView]:
    out: dict[str, ExperimentView] = {}
    for x in sorted(st.experiments.values(), key=lambda x: x.seq):
        chain = lineage(st, x.id)
        out[x.id] = ExperimentView(
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
    return out


def _stored_summary(expos: ExpOS, graph: ResearchGraph) -> dict[str, Any]:
    """The summary the harness stored with its finish record ({} before it, or when unreadable)."""
    if graph.finished is None:
        return {}
    try:
        data = json.loads(Path(expos.run.store.path(graph.finished.payload.summary)).read_bytes())
    except (RsiMasterError, OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _transcripts(expos: ExpOS) -> dict[str, list[StepView]]:
    out: dict[str, list[StepView]] = {}
    for e in expos.events("agent.step"):
        p = typed(e, AgentStep).payload
        out.setdefault(e.actor.id, []).append(
            StepView(
                seq=e.seq,
                episode=p.episode,
                index=p.index,
                content=p.content,
                tool_calls=[
                    ToolCallView(name=c.name, arguments=c.arguments, status=c.status, error=c.error)
                    for c in p.tool_calls
                ],
                tokens=p.prompt_tokens + p.completion_tokens,
            )
        )
    return out


def _nodes(
    st: State, graph: ResearchGraph, experiments: dict[str, ExperimentView], transcripts: dict[str, list[StepView]]
) -> list[NodeView]:
    by_owner: dict[str, list[ExperimentView]] = {}
    for x in experiments.values():
        by_owner.setdefault(x.owner, []).append(x)
    nodes = [
        NodeView(
            id=w.id,
            kind="worker",
            seq=w.seq,
            task=w.task,
            direction=st.workers[w.id].direction if w.id in st.workers else {},
            links=list(w.predecessors),
            done=w.done,
            summary=w.finalize.summary if w.finalize is not None else None,
            candidates=list(w.finalize.candidates) if w.finalize is not None else [],
            experiments=by_owner.get(w.id, []),
            review=None,
            transcript=transcripts.get(w.id, []),
        )
        for w in graph.workers.values()
    ]
    for r in graph.reviewers.values():
        rep = r.report
        nodes.append(
            NodeView(
                id=r.id,
                kind="reviewer",
                seq=r.seq,
                task=r.question,
                direction={},
                links=list(r.scope),
                done=r.done,
                summary=None,
                candidates=[],
                experiments=by_owner.get(r.id, []),
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
                transcript=transcripts.get(r.id, []),
            )
        )
    return sorted(nodes, key=lambda n: n.seq)


def _named_nodes(detail: dict[str, Any], graph: ResearchGraph) -> list[str]:
    """Node ids a decision's structured detail names (the nodes it added, scoped or answered)."""
    known = set(graph.workers) | set(graph.reviewers)
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
    ended = {w.finalize_seq: w.id for w in graph.workers.values()} | {
        r.report_seq: r.id for r in graph.reviewers.values()
    }
    node = ended.get(detail.get("event")) if isinstance(detail.get("event"), int) else None
    if node is not None and node not in found:
        found.append(node)
    return found


def _best(experiments: dict[str, ExperimentView]) -> dict[str, list[CurvePoint]]:
    """Best-so-far score per split (dev, review) against the budget, one point per improvement."""
    out: dict[str, list[CurvePoint]] = {}
    for split in ("dev", "review"):
        records = sorted(
            ((e.at_s, e.seq, e.score, x.id) for x in experiments.values() for e in x.evals if e.split == split),
        )
        curve: list[CurvePoint] = []
        for at, _seq, score, xid in records:
            if not curve or score > curve[-1].score:
                curve.append(CurvePoint(at_s=at, score=score, experiment=xid))
        out[split] = curve
    return out


def _lineages(experiments: dict[str, ExperimentView]) -> dict[str, list[CurvePoint]]:
    """Each lineage's dev scores in the order they were recorded (a lineage: the experiments that
    continue, however far, from one experiment trained from the base model)."""
    out: dict[str, list[CurvePoint]] = {}
    for x in experiments.values():
        dev = next((e for e in x.evals if e.split == "dev"), None)
        if dev is not None:
            out.setdefault(x.lineage_root, []).append(CurvePoint(at_s=dev.at_s, score=dev.score, experiment=x.id))
    return {k: sorted(v, key=lambda p: p.at_s) for k, v in out.items()}


def _audit_view(rep: AuditReport, st: State) -> AuditView:
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
