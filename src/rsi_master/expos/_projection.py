"""The projection: the run's typed state, folded from the ledger once, then kept up to date
from the events after the last one it saw.

Every reader of a session (tools, scheduler, Main, Reviewer, harness, audit, display) reads
the one `Projection` of its ExpOS session, advanced before it reads, so a poll costs the
events appended since the last poll, not the ledger. Each event kind is folded in exactly
one place: the ExpOS kinds in `FOLDS` below, other layers' kinds by a `Part` they register
(the orchestra's scheduler records), so no second reducer reads the same events.

Rows appended by other processes (slot processes, the door) are read like our own: each
advance asks the database for the rows after the last seq seen. The projection checks that
what it folded is still the ledger (the stored hash at its last seq, and each new row
chaining onto it), and raises instead of reading a rewritten history. It does not vouch for
rows (only a writer holding the key can, `Ledger.vouch`): a reader that decides from the
ledger vouches first, as the harness does, and a row vouching rejects stays in the ledger for
it to reject.

Sessions that take turns in one process (the simulated run's node threads) may share one fold
(`SharedProjections`): a node's session then starts from what the sessions before it folded,
instead of folding the ledger from its first event again. Each still reads and checks the
rows through its own connection, so the shared fold only ever holds rows read from the ledger.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar, Protocol, TypeVar

from .. import events as ev
from ..errors import LedgerError, MalformedEventError
from ..events import payload_of, with_payload
from ..ledger import GENESIS_HASH, Event, Ledger, Row, hash_at, rows_since
from ._state import Dataset, Decision, EvalRecord, Experiment, ReviewerNode, State, WorkerRecord, experiment_id

__all__ = ["FOLDS", "Part", "Projection", "SharedProjections", "parse_ts", "register_part"]


def parse_ts(ts: str) -> float:
    """An event's RFC 3339 UTC timestamp as seconds since the epoch."""
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() if ts else 0.0


class Part(Protocol):
    """State another layer folds from its own event kinds, kept by the projection beside ExpOS's."""

    KINDS: ClassVar[frozenset[str]]

    def fold(self, event: Event, prev_ts: str) -> None:
        """Take in one event of `KINDS`; `prev_ts` is the timestamp of the event before it."""


P = TypeVar("P", bound=Part)
_PARTS: list[type[Any]] = []
_SLICE = 10_000  # rows read per statement


def register_part(cls: type[P]) -> type[P]:
    """Have every projection made from now on fold `cls`'s kinds from its first event."""
    if cls not in _PARTS:
        _PARTS.append(cls)
    return cls


# -- ExpOS's folds: one function per event kind, on the event and its kind's payload model -------
# The event's envelope (seq, actor, ts, artifacts) is read off the ledger's `Event`; a fold that
# keeps the event types it (`with_payload`) from the payload it was handed, not read again.
Fold = Callable[[State, Event, Any], None]


def _dataset(
    st: State, e: Event, p: ev.DataGenerate | ev.DataRegister | ev.DataFilter | ev.DataMix | ev.DataSample
) -> None:
    st.datasets[p.dataset] = Dataset(
        p.dataset,
        e.seq,
        e.actor.id,
        e.kind,
        p.source,
        p.n_rows,
        p.contamination,
        list(p.inputs),
        dict(p.params) if isinstance(p, (ev.DataGenerate, ev.DataSample)) else {},
        e.actor.role,
    )


def _experiment_start(st: State, e: Event, p: ev.ExperimentStart) -> None:
    xid = experiment_id(e.seq)
    st.experiments[xid] = Experiment(
        xid,
        e.seq,
        e.actor.id,
        p.parent,
        p.parent_checkpoint,
        p.dataset,
        p.method,
        p.spec,
        role=e.actor.role,
        start_ts=parse_ts(e.ts),
    )


def _experiment_finish(st: State, e: Event, p: ev.ExperimentFinish) -> None:
    x = st.experiments.get(p.experiment_id)
    if x is None:
        return
    x.status, x.checkpoint, x.error, x.finish_seq = p.status, p.checkpoint, p.error, e.seq
    x.artifacts = [r.digest for r in e.artifacts if r.role == "output"]
    x.outputs = {r.name: r.digest for r in e.artifacts if r.role == "output" and r.name}
    x.measured = p.measured.model_dump() if p.measured is not None else {}
    x.finish_ts, x.steps, x.train_seconds = parse_ts(e.ts), p.steps, p.train_seconds
    if p.status == "completed" and p.checkpoint:
        # An evaluation scores bytes: a checkpoint an earlier experiment already produced (training
        # that left the weights where they were, or a deterministic rerun) has that one's scores.
        same = st.by_checkpoint(p.checkpoint)
        if same is not None and same is not x:
            x.same_checkpoint_as = same.id
            x.shared = sorted(
                (r for yid in st.checkpoints[p.checkpoint] for r in st.experiments[yid].evals), key=lambda r: r.seq
            )
        st.checkpoints.setdefault(p.checkpoint, []).append(x.id)


def _eval_record(st: State, e: Event, p: ev.EvalRecord) -> None:
    rec = EvalRecord(
        e.seq,
        p.experiment_id,
        p.split,
        p.score,
        p.checkpoint_digest,
        p.record_digest,
        f"{e.actor.role}:{e.actor.id}",
        p,
        parse_ts(e.ts),
    )
    x = st.experiments.get(rec.experiment_id)
    if x is None:
        return
    x.evals.append(rec)
    # The record is the checkpoint's: every other experiment that ended with these bytes shares it.
    for yid in st.checkpoints.get(rec.checkpoint_digest, ()):
        y = st.experiments[yid]
        if y is not x and y.checkpoint == rec.checkpoint_digest:
            y.shared.append(rec)


def _worker_add(st: State, e: Event, p: ev.WorkerAdd) -> None:
    node = WorkerRecord(p.worker_id, e.seq, p.task, dict(p.direction), list(p.predecessors))
    old = st.workers.get(node.id)
    st.n_edges += len(node.predecessors) - (len(old.predecessors) if old else 0)
    st.workers[node.id] = node
    st.pending.pop(node.id, None)
    st.pending[node.id] = (e.seq, "worker")


def _worker_finalize(st: State, e: Event, p: ev.WorkerFinalize) -> None:
    st.finalized[e.actor.id] = with_payload(e, p)
    st.submissions.extend((x, e.actor.id, e.seq) for x in p.candidates)
    node = st.workers.get(e.actor.id)
    if node is not None:
        if node.finalize_seq is not None:
            st.unanswered.pop(node.finalize_seq, None)
        node.finalize_seq, node.finalize = e.seq, p
        _answered_by_node(st, e.seq, "finalize", node.id)


def _review_request(st: State, e: Event, p: ev.ReviewRequest) -> None:
    node = ReviewerNode(p.reviewer_id, e.seq, p.question, list(p.scope))
    old = st.reviewers.get(node.id)
    st.n_edges += len(node.scope) - (len(old.scope) if old else 0)
    st.reviewers[node.id] = node
    st.pending.pop(node.id, None)
    st.pending[node.id] = (e.seq, "reviewer")


def _review_submit(st: State, e: Event, p: ev.ReviewSubmit) -> None:
    st.reviews.append(with_payload(e, p))
    node = st.reviewers.get(e.actor.id)
    if node is not None:
        if node.report_seq is not None:
            st.unanswered.pop(node.report_seq, None)
        node.report_seq, node.report = e.seq, p
        _answered_by_node(st, e.seq, "review", node.id)


def _answered_by_node(st: State, seq: int, kind: str, node: str) -> None:
    """A node finished: off the pending list, and an orchestration event for the Main."""
    st.pending.pop(node, None)
    if seq not in st.handled:
        st.unanswered[seq] = (seq, kind, node)


def _decision(st: State, e: Event, p: ev.DecisionRecord) -> None:
    d = Decision(e.seq, p.action, p.rationale, list(p.evidence), dict(p.detail), p.answers)
    st.decisions.append(d)
    if p.answers is not None:
        st.handled.add(p.answers)
        st.unanswered.pop(p.answers, None)


def _nominate(st: State, e: Event, p: ev.CandidateNominate) -> None:
    st.nominations.append((p.experiment_id, e.seq))


def _blocked(st: State, e: Event, p: ev.GuardBlocked) -> None:
    st.blocked.append(with_payload(e, p))


FOLDS: dict[str, tuple[type[ev.Payload], Fold]] = {
    "data.generate": (ev.DataGenerate, _dataset),
    "data.register": (ev.DataRegister, _dataset),
    "data.filter": (ev.DataFilter, _dataset),
    "data.mix": (ev.DataMix, _dataset),
    "data.sample": (ev.DataSample, _dataset),
    "experiment.start": (ev.ExperimentStart, _experiment_start),
    "experiment.finish": (ev.ExperimentFinish, _experiment_finish),
    "eval.record": (ev.EvalRecord, _eval_record),
    "worker.add": (ev.WorkerAdd, _worker_add),
    "worker.finalize": (ev.WorkerFinalize, _worker_finalize),
    "review.request": (ev.ReviewRequest, _review_request),
    "review.submit": (ev.ReviewSubmit, _review_submit),
    "decision.record": (ev.DecisionRecord, _decision),
    "candidate.nominate": (ev.CandidateNominate, _nominate),
    "guard.blocked": (ev.GuardBlocked, _blocked),
}


class _Folded:
    """What a projection has folded: the state, the parts, and where in the ledger it stands.
    Owned by one session's `Projection`, or shared by the sessions of a `SharedProjections`."""

    def __init__(self) -> None:
        self.state = State()
        self.size = 0  # events folded: the next one to read is this seq
        self.rows_read = 0  # rows fetched from the database, over the fold's life
        self.unreadable: list[int] = []  # events whose payload a fold could not read (malformed, forged)
        self.tip = GENESIS_HASH
        self.last_ts = ""
        self.parts: dict[type[Any], Any] = {}
        self.folds: dict[str, list[Callable[[Event, str], None]]] = {}
        # Held while rows are folded: a fold is never interleaved with another.
        self.lock = threading.RLock()
        for kind, (model, fold) in FOLDS.items():
            self.folds.setdefault(kind, []).append(self._expos_folder(model, fold))
        for cls in _PARTS:
            self.add_part(cls())

    def _expos_folder(self, model: type[ev.Payload], fold: Fold) -> Callable[[Event, str], None]:
        return lambda event, _ts: self._expos_fold(event, model, fold)

    def _expos_fold(self, event: Event, model: type[ev.Payload], fold: Fold) -> None:
        fold(self.state, event, payload_of(event, model))

    def add_part(self, part: Any) -> None:
        self.parts[type(part)] = part
        for kind in part.KINDS:
            self.folds.setdefault(kind, []).append(part.fold)

    def fold_row(self, row: Row, folds: list[Callable[[Event, str], None]], prev_ts: str) -> None:
        try:
            event = row.event()
            for fold in folds:
                fold(event, prev_ts)
        except (MalformedEventError, ValueError):
            # A body or payload no writer through ExpOS could record (they are validated; this
            # row was appended around the door): left out of the state, listed, never guessed at.
            self.unreadable.append(row.seq)


class Projection:
    """Typed state of one ledger; `advance()` takes in the events appended since the last call.

    Made with `Projection(ledger)`, it is one session's own. `SharedProjections.projection`
    makes one per session over a fold the sessions share; each still reads through its own
    `ledger`."""

    def __init__(self, ledger: Ledger, *, _folded: _Folded | None = None) -> None:
        self.ledger = ledger
        self._f = _Folded() if _folded is None else _folded

    @property
    def state(self) -> State:
        """The typed state: read it, never change it (every reader of the projection shares it)."""
        return self._f.state

    @property
    def size(self) -> int:
        """Events folded: the next one to read is this seq."""
        return self._f.size

    @property
    def rows_read(self) -> int:
        """Rows fetched from the database, over the (possibly shared) fold's life."""
        return self._f.rows_read

    @property
    def unreadable(self) -> list[int]:
        """Events whose payload a fold could not read (malformed, forged)."""
        return self._f.unreadable

    @property
    def _parts(self) -> dict[type[Any], Any]:
        return self._f.parts

    @property
    def last_ts(self) -> float:
        """Timestamp of the last event folded (0.0 before any)."""
        return parse_ts(self._f.last_ts)

    def advance(self, until: int | None = None) -> int:
        """Fold the events appended since the last call (by anyone), or those before `until`;
        returns how many. Reads this projection's ledger: a shared fold is checked against it
        (its last event must be the one stored at its seq here) before a row is read."""
        f = self._f
        with f.lock:
            if f.size and hash_at(self.ledger, f.size - 1) != f.tip:
                raise LedgerError(
                    f"{self.ledger.path}: event {f.size - 1} is no longer the one this session read "
                    "(the ledger was rewritten or rolled back under it); refusing to read on"
                )
            start = f.size
            while True:
                # In slices, so that a first fold of a long run never holds all its rows at once.
                first = f.size
                end = first + _SLICE if until is None else min(until, first + _SLICE)
                if end <= first:
                    return f.size - start
                rows = rows_since(self.ledger, first, end, bodies=f.folds.keys())
                f.rows_read += len(rows)
                for row in rows:
                    if row.seq != f.size or row.prev_hash != f.tip:
                        raise LedgerError(
                            f"{self.ledger.path}: event {row.seq} does not extend the events this "
                            "session read (gap or fork); refusing to read on"
                        )
                    folds = f.folds.get(row.kind)
                    if folds:
                        f.fold_row(row, folds, f.last_ts)
                    f.last_ts, f.tip, f.size = row.ts, row.hash, row.seq + 1
                if len(rows) < end - first:
                    return f.size - start

    def vouch(self) -> int:
        """Check, as the ledger's writer, that every event folded here is covered by the signed head
        and still stored as it was read (`Ledger.vouch`); raises LedgerError otherwise."""
        covered = self.ledger.vouch()
        f = self._f
        if f.size > covered or (f.size and hash_at(self.ledger, f.size - 1) != f.tip):
            raise LedgerError(
                f"{self.ledger.path}: this session read events the signed head does not vouch for "
                "(removed or rewritten since); refusing to decide from them"
            )
        return covered

    def part(self, cls: type[P]) -> P:
        """The state `cls` folds, attached (and caught up on the events read so far) at first use."""
        f = self._f
        part = f.parts.get(cls)
        if part is None:
            with f.lock:
                part = cls()
                prev = ""
                rows = rows_since(self.ledger, 0, f.size, bodies=part.KINDS) if f.size else []
                f.rows_read += len(rows)
                for row in rows:
                    if row.kind in part.KINDS:
                        f.fold_row(row, [part.fold], prev)
                    prev = row.ts
                f.add_part(part)
        return part


class SharedProjections:
    """One fold per ledger for the sessions of a process that take turns (the inline executor's
    node threads, which its conductor runs one at a time): a session's first read folds only the
    events no session before it folded, instead of the ledger from its first event.

    Each session still reads through its own database connection: before it reads, the shared
    fold's last event must be the one its own ledger stores at that seq (the hash chain then
    covers the rest), or it raises LedgerError as a session's own projection does; only rows
    read from a session's ledger are ever folded. The fold is keyed by the ledger file (path,
    device, inode) and its first event, so a file replaced or a run made anew at the same path
    starts a fold of its own. Not for sessions that run at the same time in threads (the door's):
    one would read the state while another folds into it."""

    def __init__(self) -> None:
        self._folds: dict[tuple[str, int, int, str | None], _Folded] = {}

    def projection(self, ledger: Ledger) -> Projection:
        """A projection for a session of `ledger`, over the fold its other sessions share."""
        st = os.stat(ledger.path)
        key = (os.path.realpath(ledger.path), st.st_dev, st.st_ino, hash_at(ledger, 0))
        folded = self._folds.get(key)
        if folded is None:
            folded = self._folds[key] = _Folded()
        return Projection(ledger, _folded=folded)
