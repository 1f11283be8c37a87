"""A run's view kept up to date by its new events: the live view's fold.

`collect_open` rebuilds every record of a `RunView` from the projection at each look, so a look
costs the run. `ViewFold` keeps the records it built and, at each look, reads only the events
appended since the last one (the projection has already folded them) and rebuilds the records
those events touch: an experiment (its start, finish, or an evaluation of its checkpoint), a
node (its add, finalize, review, an experiment it owns, an agent step of its own), a decision
(new, or naming a node or an orchestration event only now in the ledger), a job (new or still
open). Tool-call counts, transcripts and the score curves are extended, not recounted. The
records are the ones `collect` builds, by the same builders (`_records`); `view()` assembles
them into the same `RunView` (the tests compare the two on a simulated campaign).

Each look also writes a change log (the ledger size it reached, what changed), from which
`changed_since(size)` names what a page that has seen the run up to `size` must redraw."""

from __future__ import annotations

import bisect
import itertools
import secrets
from collections import ChainMap, Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import MalformedEventError
from ..events import ToolCall, typed
from ..expos import Decision, ExpOS, State, boundary_statement, lineage, parse_ts
from ..ledger import Event
from ..orchestra import KINDS, OrchestraPart, ResearchGraph
from ._collect import Checked, stored_summary
from ._curves import Curves
from ._model import AuditView, DecisionView, ExperimentView, JobView, NodeView, RunView, StepView
from ._records import (
    BudgetClock,
    audit_view,
    experiment_view,
    named_nodes,
    reviewer_view,
    step_view,
    verify_view,
    worker_view,
)

__all__ = ["Changes", "ViewFold"]


@dataclass
class Changes:
    """What a page that has seen the run up to some ledger size must redraw."""

    nodes: set[str] = field(default_factory=set)
    decisions: set[int] = field(default_factory=set)
    checks: bool = False  # verify, the audit or the selected lineage changed


class ViewFold:
    """One run's records, rebuilt as new events touch them (see the module's docstring). Every
    call runs on the thread that owns `expos` (the live view's worker thread)."""

    def __init__(self, expos: ExpOS) -> None:
        self.expos = expos
        self.epoch = secrets.token_hex(4)  # names this fold to the pages that looked at it
        self.size = 0  # events taken in
        self.experiments: dict[str, ExperimentView] = {}
        self.n_experiments = 0
        self.by_owner: dict[str, list[str]] = {}
        self.transcripts: dict[str, list[StepView]] = {}
        self.nodes: dict[str, NodeView] = {}
        self.decisions: dict[int, DecisionView] = {}
        self.decision_records: dict[int, Decision] = {}
        self.decision_ts: dict[int, float] = {}
        # A decision names a node or an orchestration event that may only come later.
        self.waiting_names: dict[str, set[int]] = {}
        self.waiting_events: dict[int, set[int]] = {}
        self.ended: dict[int, str] = {}
        self.jobs: list[JobView] = []
        self.open_jobs: set[int] = set()
        self.fifths: list[Counter[str]] = [Counter() for _ in range(5)]
        self.stops: list[float] = []
        self.curves = Curves()
        self.summary: dict[str, Any] = {}
        self.checked: Checked | None = None
        self.audit: AuditView | None = None
        self._audit_key: tuple[int, int] = (-1, -1)
        self._clock_sessions = -1
        self.clock: BudgetClock | None = None
        self.log_sizes: list[int] = []
        self.log: list[Changes] = []
        # What the fold did, for the tests that hold an update to its new events (counts, not times).
        self.events_read = 0
        self.unreadable: list[int] = []  # new events whose payload could not be read
        self.records_built = 0

    # -- taking in new events ------------------------------------------------------------
    def update(self, checked: Checked) -> bool:
        """Take in the events appended since the last call; False when there were none and the
        checks are the ones already shown."""
        proj = self.expos.projection()
        size = proj.size
        if size == self.size and checked is self.checked:
            return False
        st, orc = proj.state, proj.part(OrchestraPart)
        if len(orc.sessions) != self._clock_sessions:
            self.clock = BudgetClock(ResearchGraph(sessions=list(orc.sessions), _ts_before=dict(orc.ts_before)))
            self._clock_sessions = len(orc.sessions)
        changes = Changes(checks=checked is not self.checked)
        self.checked = checked
        new = list(self.expos.run.ledger.events(since=self.size, limit=size - self.size)) if size > self.size else []
        self.events_read += len(new)
        touched_x: set[str] = set()
        touched_nodes: set[str] = set()
        redo_decisions: set[int] = set()
        calls: list[tuple[float, str]] = []  # (time, kind) of each new tool call
        for e in new:
            try:
                self._take(e, st, orc, changes, touched_x, touched_nodes, redo_decisions, calls)
            except (MalformedEventError, ValueError):
                # A payload no writer through ExpOS could record: left out, as the projection leaves it.
                self.unreadable.append(e.seq)
        # New experiments are the last ones the state holds (its dict keeps their start order).
        new_x = len(st.experiments) - self.n_experiments
        touched_x.update(itertools.islice(reversed(st.experiments), new_x))
        self.n_experiments = len(st.experiments)
        # In start order (an id's digits grow past five: its text does not sort as its seq).
        for xid in sorted((x for x in touched_x if x in st.experiments), key=lambda x: st.experiments[x].seq):
            if self._experiment(st, xid):
                touched_nodes.add(self.experiments[xid].owner)
        for nid in touched_nodes:
            if self._node(st, nid):
                changes.nodes.add(nid)
        for d in st.decisions[len(self.decision_records) :]:
            self.decision_records[d.seq] = d
        for seq in sorted(redo_decisions):
            self._decision(st, seq)
        changes.decisions |= redo_decisions
        self._jobs(orc, proj.last_ts)
        self._count_calls(calls, orc, proj.last_ts)
        audit_key = (id(checked), len(st.blocked))
        if audit_key != self._audit_key:
            self.audit = audit_view(checked.audit, st) if checked.audit is not None else None
            self._audit_key, changes.checks = audit_key, True
        self.size = size
        self.log_sizes.append(size)
        self.log.append(changes)
        return True

    def _take(
        self,
        e: Event,
        st: State,
        orc: OrchestraPart,
        changes: Changes,
        touched_x: set[str],
        touched_nodes: set[str],
        redo_decisions: set[int],
        calls: list[tuple[float, str]],
    ) -> None:
        """Note what one new event touches (the records are rebuilt once every new event is read)."""
        kind = e.kind
        if kind in ("experiment.finish", "eval.record"):
            p = typed(e).payload
            xid = getattr(p, "experiment_id", None)
            if isinstance(xid, str):
                touched_x.add(xid)
            if kind == "eval.record":  # the record is its checkpoint's: every experiment with those bytes
                touched_x.update(st.checkpoints.get(str(getattr(p, "checkpoint_digest", None)), ()))
        elif kind in ("worker.add", "review.request"):
            nid = getattr(typed(e).payload, "worker_id" if kind == "worker.add" else "reviewer_id", None)
            if isinstance(nid, str):
                touched_nodes.add(nid)
                redo_decisions |= self.waiting_names.pop(nid, set())
        elif kind in ("worker.finalize", "review.submit"):
            touched_nodes.add(e.actor.id)
            self.ended[e.seq] = e.actor.id
            redo_decisions |= self.waiting_events.pop(e.seq, set())
        elif kind == "decision.record":
            self.decision_ts[e.seq] = parse_ts(e.ts)
            redo_decisions.add(e.seq)
        elif kind == "agent.step":
            self.transcripts.setdefault(e.actor.id, []).append(step_view(e))
            touched_nodes.add(e.actor.id)
        elif kind == "tool.call":
            calls.append((parse_ts(e.ts), typed(e, ToolCall).payload.kind))
        elif kind == "orchestra.stop" and e.actor.role == "harness":
            self.stops.append(parse_ts(e.ts))
        elif kind == "orchestra.finish" and e.actor.role == "harness":
            self.summary = stored_summary(self.expos.reader, orc.finished)
            changes.checks = True

    def _experiment(self, st: State, xid: str) -> bool:
        x = st.experiments.get(xid)
        if x is None:
            return False
        assert self.clock is not None
        old = self.experiments.get(xid)
        view = self.experiments[xid] = experiment_view(x, st, self.clock)
        self.records_built += 1
        if old is None:
            self.by_owner.setdefault(view.owner, []).append(xid)
        self.curves.take(old, view, x.seq)
        return True

    def _node(self, st: State, nid: str) -> bool:
        xs = [self.experiments[x] for x in self.by_owner.get(nid, ())]
        steps = self.transcripts.get(nid, [])
        if nid in st.workers:
            self.nodes[nid] = worker_view(st.workers[nid], xs, steps)
        elif nid in st.reviewers:
            self.nodes[nid] = reviewer_view(st.reviewers[nid], xs, steps)
        else:
            return False
        self.records_built += 1
        return True

    def _decision(self, st: State, seq: int) -> None:
        d = self.decision_records.get(seq)
        if d is None or seq not in self.decision_ts:
            return
        detail = d.detail
        assert self.clock is not None
        known: ChainMap[str, object] = ChainMap(st.workers, st.reviewers)  # type: ignore[arg-type]
        for name in _strings(detail):
            if name not in known:
                self.waiting_names.setdefault(name, set()).add(seq)
        if d.answers is not None and d.answers not in self.ended:
            self.waiting_events.setdefault(d.answers, set()).add(seq)
        self.records_built += 1
        self.decisions[seq] = DecisionView(
            seq=d.seq,
            action=d.action,
            rationale=d.rationale,
            evidence=list(d.evidence),
            nodes=named_nodes(d.detail, d.answers, known, self.ended),
            at_s=self.clock.at(self.decision_ts[seq]),
        )

    def _jobs(self, orc: OrchestraPart, last_ts: float) -> None:
        assert self.clock is not None
        for i in sorted(self.open_jobs | set(range(len(self.jobs), len(orc.jobs)))):
            j = orc.jobs[i]
            view = JobView(
                node=j.node,
                kind=j.kind,
                slot=j.slot,
                start_s=self.clock.at(j.start_ts),
                end_s=self.clock.at(j.end_ts if j.end_ts is not None else last_ts),
                status=j.status,
            )
            if i < len(self.jobs):
                self.jobs[i] = view
            else:
                self.jobs.append(view)
            if j.end_ts is None:
                self.open_jobs.add(i)
            else:
                self.open_jobs.discard(i)

    def _count_calls(self, calls: list[tuple[float, str]], orc: OrchestraPart, last_ts: float) -> None:
        """Tool calls per fifth of the budget, as `run_metrics` counts them: each session's agent
        phase runs from its start to the stop in it (or to the next session, or the last event)."""
        budget = orc.settings.budget_s if orc.settings is not None else 0.0
        if not calls or budget <= 0:
            return
        windows, before = [], 0.0
        for i, (_seq, start, _p) in enumerate(orc.sessions):
            nxt = orc.ts_before.get(orc.sessions[i + 1][0], last_ts) if i + 1 < len(orc.sessions) else last_ts
            end = min([s for s in self.stops if start <= s <= nxt] or [nxt])
            windows.append((start, end, before))
            before += max(0.0, nxt - start)
        for ts, kind in calls:
            win = next((w for w in windows if w[0] <= ts <= w[1]), None)
            if win is not None:
                pos = win[2] + (ts - win[0])
                self.fifths[min(4, max(0, int(5 * pos / budget)))][kind] += 1

    # -- reading ---------------------------------------------------------------------------
    def changed_since(self, size: int) -> Changes | None:
        """What changed after a page saw the run at `size` events (None when this fold cannot
        say: a size it never stood at, as after a restart of the server; the page then reloads
        the whole payload)."""
        i = bisect.bisect_right(self.log_sizes, size)
        if size > self.size or i == 0 or self.log_sizes[i - 1] != size:
            return None
        out = Changes()
        for c in self.log[i:]:
            out.nodes |= c.nodes
            out.decisions |= c.decisions
            out.checks |= c.checks
        return out

    def main_steps_since(self, size: int) -> list[StepView]:
        steps = self.transcripts.get("main", [])
        return steps[bisect.bisect_left(steps, size, key=lambda s: s.seq) :]

    @property
    def finished(self) -> bool:
        return self.expos.projection().part(OrchestraPart).finished is not None

    def counts(self) -> tuple[int, int, int]:
        """Workers, Reviewers and edges of the research DAG."""
        st = self.expos.projection().state
        return len(st.workers), len(st.reviewers), st.n_edges

    def view(self, *, records: bool = True) -> RunView:
        """The run's `RunView`, as `collect_open` builds it, from the records kept here; without
        `records`, only what does not grow with the run (no nodes, edges, decisions, transcripts,
        curves, jobs or tool-call counts): what a live page's summary needs at each new event."""
        assert self.checked is not None, "update() first"
        proj = self.expos.projection()
        st, orc = proj.state, proj.part(OrchestraPart)
        report, checked = self.checked.report, self.checked
        problems = [str(p) for p in report.problems]
        unreadable = proj.unreadable
        if unreadable:
            problems.append(
                f"{len(unreadable)} events could not be read and are left out (first: event {unreadable[0]})"
            )
        if checked.audit_error is not None:
            problems.append(checked.audit_error)
        settings = orc.settings
        selected = self.summary.get("selected") if isinstance(self.summary.get("selected"), str) else None
        source = self.expos.contract.base_model_source
        graph = ResearchGraph(sessions=orc.sessions, _ts_before=orc.ts_before, last_ts=proj.last_ts)
        # Built from records validated when they were made: not validated again (a run's every
        # record, each time a figure is redrawn, would cost the run).
        return RunView.model_construct(
            run_dir=str(self.expos.run.path),
            run_id=report.run_id,
            problems=problems,
            verify=verify_view(report),
            task=self.expos.contract.task,
            backend=self.expos.backend.name,
            base_model=self.expos.contract.base_model_artifact,
            model=(source.repo_id or source.spec) if source is not None else "shipped",
            agents={"main": settings.main, "worker": settings.worker, "reviewer": settings.reviewer}
            if settings
            else {},
            budget_s=settings.budget_s if settings else None,
            spent_s=round(graph.spent_seconds(), 3) if orc.sessions else None,
            slots=settings.slots if settings else None,
            finished=orc.finished is not None,
            summary=self.summary,
            trust_boundary=str(self.summary.get("trust_boundary") or boundary_statement()),
            nodes=sorted(self.nodes.values(), key=lambda n: n.seq) if records else [],
            edges=self.edges(st) if records else [],
            decisions=[self.decisions[d.seq] for d in st.decisions if d.seq in self.decisions] if records else [],
            main_transcript=list(self.transcripts.get("main", [])) if records else [],
            best=self.curves.best_curves() if records else {},
            lineages=self.curves.lineage_curves() if records else {},
            jobs=list(self.jobs) if records else [],
            tool_calls_by_fifth=[{k: c.get(k, 0) for k in KINDS} for c in self.fifths] if records else [],
            audit=self.audit,
            selected=selected,
            selected_lineage=[self.experiments[x.id] for x in lineage(st, selected)] if selected else [],
            size=self.size,
            checked_at=checked.size,
        )

    @staticmethod
    def edges(st: State) -> list[tuple[str, str, str]]:
        out = [(p, w.id, "context") for w in st.workers.values() for p in w.predecessors]
        return out + [(s, r.id, "scope") for r in st.reviewers.values() for s in r.scope]


def _strings(v: object) -> Iterable[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for item in v.values():
            yield from _strings(item)
    elif isinstance(v, list | tuple):
        for item in v:
            yield from _strings(item)
