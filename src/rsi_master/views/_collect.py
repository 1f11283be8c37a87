"""Read one run into a `RunView`: `verify`, the session's projection (state and research graph),
the audit and the run's metrics, each through its own reader; nothing re-parses the ledger.

A run that does not verify is still read as far as the readers go: verify's problems come first,
and a reader that refuses (a rewritten history, an unreadable contract) adds its refusal to them
instead of ending the report."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import NotARunError, RsiMasterError
from ..events import OrchestraFinish, TypedEvent
from ..expos import AuditReport, ExpOS, RunReader, State, audit, boundary_statement, lineage, load_state, parse_ts
from ..orchestra import ResearchGraph, load_graph, run_metrics
from ..rundir import RunReport, VerifyMemo, verify_run
from ._model import DecisionView, ExperimentView, JobView, NodeView, RunView, StepView
from ._records import (
    BudgetClock,
    audit_view,
    best_curves,
    ended_nodes,
    experiment_view,
    lineage_curves,
    named_nodes,
    reviewer_view,
    step_view,
    verify_view,
    worker_view,
)

__all__ = ["Checked", "check_open", "collect", "collect_open", "stored_summary"]


def collect(run_dir: str | Path, key_dir: str | None = None) -> RunView:
    """The report's view of `run_dir` (NotARunError when it is no run directory at all)."""
    path = Path(run_dir)
    report = verify_run(path, key_dir=key_dir)  # raises NotARunError for a path that is no run
    problems = [str(p) for p in report.problems]
    try:
        with ExpOS.open(path, key_dir=key_dir, writable=False) as expos:
            return _read(expos.reader, path, _audited(expos, report))
    except NotARunError:
        raise
    except RsiMasterError as exc:
        return _unreadable(path, report, [*problems, f"the run could not be read: {exc}"])


@dataclass(frozen=True)
class Checked:
    """verify's and the audit's findings at one ledger size: the live view reuses them between its
    checks instead of re-running both over the whole run at every new event."""

    size: int
    report: RunReport
    audit: AuditReport | None
    audit_error: str | None


def _audited(expos: ExpOS, report: RunReport) -> Checked:
    size = expos.projection().size
    try:
        return Checked(size, report, audit(expos), None)
    except RsiMasterError as exc:  # e.g. the seal secret is not in this key directory
        return Checked(size, report, None, f"the audit could not run: {exc}")


def check_open(expos: ExpOS, key_dir: str | None, memo: VerifyMemo) -> Checked:
    """verify (re-checking only what changed since `memo`'s last use) and the audit of an open run."""
    return _audited(expos, verify_run(Path(expos.run.path), key_dir=key_dir, memo=memo))


def collect_open(reader: RunReader, checked: Checked) -> RunView:
    """The view of a run whose read-only session a caller keeps open (the live view): its projection
    takes in only the events since the last call; verify and the audit are `checked`'s, shown with
    the ledger size they were made at when the run has grown since."""
    return _read(reader, Path(reader.path), checked)


def _unreadable(path: Path, report: RunReport, problems: list[str]) -> RunView:
    return RunView(
        run_dir=str(path),
        run_id=report.run_id,
        problems=problems,
        verify=verify_view(report),
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


def _read(reader: RunReader, path: Path, checked: Checked) -> RunView:
    report, rep = checked.report, checked.audit
    problems = [str(p) for p in report.problems]
    st = load_state(reader)
    graph = load_graph(reader)
    unreadable = reader.projection().unreadable
    if unreadable:
        problems.append(f"{len(unreadable)} events could not be read and are left out (first: event {unreadable[0]})")
    if checked.audit_error is not None:
        problems.append(checked.audit_error)
    clock = BudgetClock(graph)
    experiments = _experiments(st, clock)
    summary = stored_summary(reader, graph.finished)
    transcripts = _transcripts(reader)
    metrics = run_metrics(reader, graph)
    selected = summary.get("selected") if isinstance(summary.get("selected"), str) else None
    settings = graph.settings
    known = graph.workers | graph.reviewers
    ended = ended_nodes(st.workers.values(), st.reviewers.values())
    source = reader.contract.base_model_source
    return RunView(
        run_dir=str(path),
        run_id=report.run_id,
        problems=problems,
        verify=verify_view(report),
        task=reader.contract.task,
        backend=reader.backend_name,
        base_model=reader.contract.base_model_artifact,
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
                nodes=named_nodes(d.detail, d.answers, known, ended),
                at_s=clock.at(_ts_of(reader, d.seq)),
            )
            for d in graph.decisions
        ],
        main_transcript=[s for actor, steps in transcripts.items() if actor == "main" for s in steps],
        best=best_curves(experiments.values()),
        lineages=lineage_curves(experiments.values()),
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
        audit=audit_view(rep, st) if rep is not None else None,
        selected=selected,
        selected_lineage=[experiments[x.id] for x in lineage(st, selected)] if selected else [],
        size=reader.projection().size,
        checked_at=checked.size,
    )


def _ts_of(reader: RunReader, seq: int) -> float:
    e = next(iter(reader.ledger.events(since=seq, limit=1)), None)
    return parse_ts(e.ts) if e is not None else 0.0


def _experiments(st: State, clock: BudgetClock) -> dict[str, ExperimentView]:
    return {x.id: experiment_view(x, st, clock) for x in sorted(st.experiments.values(), key=lambda x: x.seq)}


def stored_summary(reader: RunReader, finished: TypedEvent[OrchestraFinish] | None) -> dict[str, Any]:
    """The summary the harness stored with its finish record ({} before it, or when unreadable)."""
    if finished is None:
        return {}
    try:
        data = json.loads(Path(reader.store.path(finished.payload.summary)).read_bytes())
    except (RsiMasterError, OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _transcripts(reader: RunReader) -> dict[str, list[StepView]]:
    out: dict[str, list[StepView]] = {}
    for e in reader.events("agent.step"):
        out.setdefault(e.actor.id, []).append(step_view(e))
    return out


def _nodes(
    st: State, graph: ResearchGraph, experiments: dict[str, ExperimentView], transcripts: dict[str, list[StepView]]
) -> list[NodeView]:
    by_owner: dict[str, list[ExperimentView]] = {}
    for x in experiments.values():
        by_owner.setdefault(x.owner, []).append(x)
    nodes = [
        worker_view(st.workers[w.id], by_owner.get(w.id, []), transcripts.get(w.id, []))
        for w in graph.workers.values()
        if w.id in st.workers
    ]
    nodes += [reviewer_view(r, by_owner.get(r.id, []), transcripts.get(r.id, [])) for r in graph.reviewers.values()]
    return sorted(nodes, key=lambda n: n.seq)
