"""The scheduler: Worker and Reviewer nodes on an executor (a local pool of slot processes, or
threads on a simulated clock: `_executor`), a budget on the run's clock, the Main agent at each
orchestration event.

The budget counts wall time of the run's sessions, whatever is in flight: a slot busy
with a long experiment spends budget like any other. Each node gets a deadline (the
budget's end, or its own allowance if sooner) and plans its work to end by then; at the
budget's end the scheduler stops adding work, gives running nodes a short grace, then
kills what is left and records it as interrupted. Everything the scheduler knows is in
the ledger (`orchestra.*` events), so `resume` starts from the ledger alone.

Each poll advances the session's projection once (the events since the last poll) and
reads what is new from it; a snapshot of the graph is made only for the Main to decide on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import _clock
from ..events import (
    OrchestraAbandon,
    OrchestraInterrupted,
    OrchestraJobEnd,
    OrchestraJobStart,
    OrchestraResume,
    OrchestraStart,
    OrchestraStop,
    Payload,
)
from ..expos import State
from . import _main_policy  # noqa: F401  (registers the policy Main)
from ._display import Display
from ._executor import NodeLaunch, ProcessExecutor
from ._gpus import assign_devices, slot_environment
from ._graph import ORCHESTRA, OrchestraEvent, OrchestraPart, load_graph, parse_ts, snapshot
from ._guidance import Guidance, GuidancePart, answer_plainly
from ._protocols import MAINS, MainContext, resolve
from ._reports import best_supported_score

if TYPE_CHECKING:
    from ..expos import ExpOS

__all__ = ["MIN_LAUNCH_S", "TERM_GRACE_S", "Scheduler"]

# A node started with less time than this could not finish one experiment or review.
MIN_LAUNCH_S = 20.0
# After SIGTERM a Worker records its finalize; this is how long that may take.
TERM_GRACE_S = 15.0


@dataclass
class _Running:
    proc: Any  # the executor's handle (exitcode, terminate, kill, join)
    node: str
    kind: str
    slot: int
    start_seq: int
    start_ts: float


@dataclass
class Scheduler:
    expos: ExpOS
    display: Display
    key_dir: str | None = None
    poll_s: float = 0.5
    running: dict[int, _Running] = field(default_factory=dict)  # slot -> job
    # Where nodes run and on which clock (`_executor`): the run's experiment backend names it.
    executor: Any = None

    def __post_init__(self) -> None:
        graph = load_graph(self.expos.reader)
        if graph.settings is None:
            raise ValueError("not an orchestrated run")
        self.cfg: OrchestraStart = graph.settings
        self.budget_s = float(self.cfg.budget_s)
        self.slots = self.cfg.slots
        self.seed = self.cfg.seed
        self.grace_s = self.cfg.grace_s if self.cfg.grace_s is not None else max(20.0, 0.1 * self.budget_s)
        self.min_launch_s = min(MIN_LAUNCH_S, 0.25 * self.budget_s)
        # The Main acts with a capability like every node: the ledger records which one acted.
        self.main_caller = self.expos.authenticate(self.expos.issue("main", "main"))
        self.main = resolve(MAINS, self.cfg.main)()

        if self.executor is None:
            self.executor = ProcessExecutor()
        # Checked again on resume: the machine may have fewer GPUs than the one that started the run.
        # An executor that places GPUs itself (Ray, on the cluster's machines) gets none assigned here.
        places = getattr(self.executor, "places_gpus", False)
        self.devices = None if places else assign_devices(self.slots, self.cfg.gpus_per_slot or 0)
        self._guided: set[int] = set()  # guidance this session has put to the Main

    # -- budget ------------------------------------------------------------------------------
    def _open_session(self, session: Payload, spent_before: float) -> None:
        self.spent_before = spent_before
        ev = self.expos.record(ORCHESTRA, session)
        self.session_start = parse_ts(ev.ts)

    def spent(self) -> float:
        return self.spent_before + (_clock.now() - self.session_start)

    def deadline(self) -> float:
        return self.session_start + (self.budget_s - self.spent_before)

    def main_ctx(self) -> MainContext:
        return MainContext(
            self.expos, self.main_caller, self.budget_s, self.spent, self.slots, self.seed, self.cfg.worker
        )

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """First session: the orchestra.start event was recorded with the contract."""
        graph = load_graph(self.expos.reader)
        self.spent_before = 0.0
        self.session_start = graph.sessions[0][1]
        if not graph.workers:
            self.main.start(self.main_ctx(), graph)

    def resume(self) -> None:
        graph = load_graph(self.expos.reader)
        # The new session opens first, so that the killed one ends at its own last event: the
        # time between the kill and now is not spent, and what is recorded below belongs to now.
        self._open_session(OrchestraResume(slots=self.slots, pid=os.getpid()), graph.spent_seconds())
        # Whatever a killed session left open is recorded as interrupted, never redone silently.
        for j in graph.open_jobs():
            self.expos.record(
                ORCHESTRA,
                OrchestraJobEnd(
                    start_seq=j.start_seq,
                    node=j.node,
                    status="interrupted",
                    end_ts=graph.last_ts,
                    seconds=max(0.0, graph.last_ts - j.start_ts),
                ),
            )
        lost = self._lost()
        if lost:
            self.expos.record(
                ORCHESTRA,
                OrchestraInterrupted(experiments=lost, reason="started in a session that ended without finishing them"),
            )
        self.display.line(
            f"resumed: {self.spent_before:.0f}s of {self.budget_s:.0f}s spent before; "
            f"interrupted experiments: {', '.join(lost) or 'none'}"
        )

    def drive(self) -> str:
        """Run until the budget is spent or no work is left; returns the reason."""
        graph = load_graph(self.expos.reader)
        if graph.stopped is not None:
            return graph.stopped.payload.reason
        try:
            reason = self._loop()
        except KeyboardInterrupt:
            # Ctrl-C: the running nodes are asked to finalize and then killed, as at the budget's
            # end, so that no slot process outlives the interrupted run (its process would
            # otherwise wait at exit for a Worker that has hours of allowance left).
            self._stop_running()
            raise
        self.expos.record(ORCHESTRA, OrchestraStop(reason=reason, spent_s=round(self.spent(), 3)))
        self._drain()
        return reason

    def _loop(self) -> str:
        failures: dict[str, int] = {}
        idle_asked_at = -1
        while True:
            proj = self.expos.projection()  # once per poll: the events since the last one
            st, orc = proj.state, proj.part(OrchestraPart)
            for ev in sorted(st.unanswered.values()):
                if self.spent() < self.budget_s:
                    self.main.on_event(self.main_ctx(), snapshot(proj), OrchestraEvent(*ev))
                    self.expos.projection()  # what the Main recorded
                    self._show_decision(st)
            self._guide(proj)
            if self.spent() >= self.budget_s:
                return "budget spent"
            busy = {j.node for j in self.running.values()}
            pending = [(k, n) for n, (_seq, k) in st.pending.items() if n not in busy and n not in orc.abandoned]
            too_late = self.deadline() - _clock.now() < self.min_launch_s
            # Paused by the operator: nothing new starts, running nodes finish, the budget runs on.
            held = too_late or proj.part(GuidancePart).paused
            if held:
                pending = []  # too late to start anything useful, or paused: let running nodes finish
            for slot in range(self.slots):
                if slot in self.running or not pending:
                    continue
                kind, node = pending.pop(0)
                self._launch(proj, slot, kind, node)
            free = self.slots - len(self.running)
            # The Main is asked about an idle slot once per change of the graph, not once per
            # poll: asking costs it graph reads, which are recorded tool calls.
            if free and not pending and not held and proj.size != idle_asked_at:
                if self.main.on_idle(self.main_ctx(), snapshot(proj), free):
                    self._show_decision(self.expos.projection().state)
                    continue
                idle_asked_at = self.expos.projection().size
            if free and not pending and not held and not self.running:
                return "no work left"
            self.display.status(self._status(st))
            self._reap(self.executor.poll_timeout(self.poll_s, self.deadline()), failures)

    def _guide(self, proj: Any) -> None:
        """Operator guidance not answered yet: the Main answers each with a decision that cites it,
        then the scheduler carries out what is the harness's to do (a pause is read at each launch;
        a Worker to stop is asked to finalize, or never launched)."""
        part = proj.part(GuidancePart)
        # Answered by a later decision only: a Main that names a guidance seq before it exists
        # (or names garbage) cannot have the scheduler skip that guidance's stop.
        answered = {g for d in proj.state.decisions if isinstance(g := d.detail.get("guidance"), int) and g < d.seq}
        for g in [g for g in part.given if g.seq not in answered and g.seq not in self._guided]:
            self._guided.add(g.seq)
            self.display.line(g.summary())
            if self.spent() < self.budget_s:
                answer = getattr(self.main, "on_guidance", None)
                if answer is not None:
                    answer(self.main_ctx(), snapshot(proj), g)
                else:  # a Main written before guidance existed still answers on the record
                    answer_plainly(self.main_ctx(), g)
                self.expos.projection()  # what the Main recorded
                self._show_decision(proj.state)
            self._stop_workers(proj, g)

    def _stop_workers(self, proj: Any, g: Guidance) -> None:
        for node in g.request.stop_worker:
            job = next((j for j in self.running.values() if j.node == node), None)
            if job is not None:
                job.proc.terminate()  # SIGTERM: the Worker finalizes with what it has
                self.display.line(f"stop worker {node} (guidance {g.seq})")
            elif node in proj.state.pending and node not in proj.part(OrchestraPart).abandoned:
                self.expos.record(ORCHESTRA, OrchestraAbandon(node=node, attempts=0))
                self.display.line(f"worker {node} will not be launched (guidance {g.seq})")

    def _drain(self) -> None:
        end = _clock.now() + self.grace_s
        while self.running and _clock.now() < end:
            self._reap(min(self.executor.poll_timeout(self.poll_s, end), max(0.0, end - _clock.now())), {})
        self._stop_running()
        lost = self._lost()
        if lost:
            self.expos.record(
                ORCHESTRA, OrchestraInterrupted(experiments=lost, reason="the budget ended while they ran")
            )

    def _stop_running(self) -> None:
        """Ask first (SIGTERM: a Worker finalizes with what it has), then kill what is left."""
        for job in self.running.values():
            job.proc.terminate()
        end = _clock.now() + TERM_GRACE_S
        while self.running and _clock.now() < end:
            self._reap(
                min(self.executor.poll_timeout(self.poll_s, end), max(0.0, end - _clock.now())), {}, status_ok="stopped"
            )
        for slot, job in list(self.running.items()):
            job.proc.kill()
            job.proc.join()
            self._end(slot, job, "killed")

    def _lost(self) -> list[str]:
        """Experiments started and neither finished nor recorded as interrupted."""
        proj = self.expos.projection()
        interrupted = proj.part(OrchestraPart).interrupted
        return sorted(
            x.id for x in proj.state.experiments.values() if x.status == "running" and x.id not in interrupted
        )

    # -- jobs --------------------------------------------------------------------------------
    def _launch(self, proj: Any, slot: int, kind: str, node: str) -> None:
        deadline = self.deadline()
        if kind == "worker":
            orc = proj.part(OrchestraPart)
            prior = sum((j.end_ts or j.start_ts) - j.start_ts for j in orc.jobs if j.node == node)
            allowance = orc.direction(proj.state.workers[node]).seconds
            deadline = min(deadline, _clock.now() + max(0.0, allowance - prior))
        ev = self.expos.record(
            ORCHESTRA,
            OrchestraJobStart(
                node=node,
                kind=kind,  # type: ignore[arg-type]
                slot=slot,
                deadline=round(deadline, 3),
                **({"devices": self.devices[slot]} if self.devices else {}),
            ),
        )
        # The node's capability goes to its process through the spawn pipe (or to its thread), not
        # argv or the environment; it expires with the budget (and its grace) so it dies with the run.
        token = self.expos.issue(kind, node, ttl_s=max(60.0, deadline - _clock.now() + self.grace_s + 60.0))
        launch = NodeLaunch(
            str(self.expos.run.path),
            self.key_dir,
            kind,
            node,
            deadline,
            self.seed,
            self.cfg.reviewer,
            os.getpid(),
            self.slots,
            token,
        )

        # A slot process inherits the environment it starts in, hence its devices.
        with slot_environment(self.devices[slot] if self.devices else None):
            proc = self.executor.start(launch)
        self.running[slot] = _Running(proc, node, kind, slot, ev.seq, _clock.now())
        self.display.line(f"start {kind} {node} in slot {slot} ({max(0.0, deadline - _clock.now()):.0f}s)")

    def _reap(self, timeout: float, failures: dict[str, int], status_ok: str = "done") -> None:
        ready = self.executor.wait([j.proc for j in self.running.values()], timeout)
        for slot, job in list(self.running.items()):
            if job.proc in ready:
                job.proc.join()
                status = status_ok if job.proc.exitcode == 0 else "failed"
                self._end(slot, job, status)
                if status == "failed":
                    failures[job.node] = failures.get(job.node, 0) + 1
                    if failures[job.node] >= 2:  # a node that crashes twice would otherwise loop forever
                        self.expos.record(ORCHESTRA, OrchestraAbandon(node=job.node, attempts=2))

    def _end(self, slot: int, job: _Running, status: str) -> None:
        now = _clock.now()
        self.expos.record(
            ORCHESTRA,
            OrchestraJobEnd(
                start_seq=job.start_seq,
                node=job.node,
                status=status,
                exitcode=job.proc.exitcode,
                end_ts=round(now, 6),
                seconds=round(now - job.start_ts, 3),
            ),
        )
        del self.running[slot]
        self.display.line(f"end {job.kind} {job.node} ({status}, {now - job.start_ts:.0f}s)")

    # -- display -----------------------------------------------------------------------------
    def _show_decision(self, st: State) -> None:
        if st.decisions:
            d = st.decisions[-1]
            if d.seq != getattr(self, "_last_shown", None):
                self._last_shown = d.seq
                self.display.line(f"decision {d.action}: {d.rationale}")

    def _status(self, st: State) -> dict[str, Any]:
        if getattr(self, "_best_at", None) != len(st.reviews):  # recomputed when a review came in
            self._best_at, self._best = len(st.reviews), None
            self._best = best_supported_score(r.report for r in st.reviewers.values())
        return {
            "spent_s": self.spent(),
            "budget_s": self.budget_s,
            "workers": len(st.workers),
            "reviewers": len(st.reviewers),
            "decisions": len(st.decisions),
            "running": [f"{j.kind} {j.node}" for j in self.running.values()],
            "best_verified": self._best,
            "edges": st.n_edges,
        }
