"""A person's guidance to a running campaign: written by the operator's own code, folded for the
scheduler and the Main.

`give_guidance` is the one writer: it opens nothing itself, checks the request against the run (a
finished or stopped run, an unknown direction or Worker, a text over 4 kB are one-line refusals with
nothing written; `check_guidance`) and records one `human.guidance` event as the `operator` role, the operating-system user as id, with a
capability of that role issued from the operator key directory (which only the operator holds).
`guide_run` is what the `rsi-master guide` command and the live view's form call: it checks on a
read-only session first, because opening a run for writing is itself a write (the key directory
records where the run now lives, a lagging witness is moved on), and a refusal writes nothing.
The payload has no field for the contract, the budget or a split, so guidance cannot move any of
them. `GuidancePart` folds only events whose actor is the operator: an agent cannot write one
through the door (no tool takes the operator role, and its capability names its own role).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import ValidationError

from ..errors import RsiMasterError
from ..events import HumanGuidance, payload_of
from ..expos import NODE_ID, OPERATOR_ROLE, Caller, ExpOS, RunReader, capability_id, register_part
from ._directions import Direction, default_directions
from ._graph import load_graph

if TYPE_CHECKING:
    from ..expos import Projection
    from ..ledger import Event
    from ._protocols import MainContext

__all__ = [
    "Guidance",
    "GuidanceError",
    "GuidancePart",
    "GuidanceView",
    "answer_plainly",
    "check_guidance",
    "give_guidance",
    "guide_run",
    "guided_by",
    "names",
    "operator_id",
]

OPERATOR = OPERATOR_ROLE


class GuidanceError(RsiMasterError):
    """Guidance refused before anything was written."""


@dataclass(frozen=True)
class Guidance:
    """One `human.guidance` event as the Main reads it."""

    seq: int
    by: str
    request: HumanGuidance

    def summary(self) -> str:
        """The guidance in one line, for a rationale and the terminal."""
        p = self.request
        parts = [f"{k} {', '.join(v)}" for k, v in (("prefer", p.prefer), ("avoid", p.avoid)) if v]
        parts += [f"stop {', '.join(p.stop_worker)}"] if p.stop_worker else []
        parts += [p.flow] if p.flow else []
        parts += [repr(p.text[:200])] if p.text.strip() else []
        return f"operator guidance {self.seq} from {self.by}: " + "; ".join(parts)


@register_part
class GuidancePart:
    """The operator's guidance, folded as it comes: every event, whether launches are paused, and
    the directions preferred and avoided (a later word on a direction replaces an earlier one)."""

    KINDS: ClassVar[frozenset[str]] = frozenset({"human.guidance"})

    def __init__(self) -> None:
        self.given: list[Guidance] = []
        self.paused = False
        self.preferred: list[str] = []
        self.avoided: set[str] = set()

    def fold(self, e: Event, prev_ts: str) -> None:
        if e.actor.role != OPERATOR:
            return
        p = payload_of(e, HumanGuidance)
        self.given.append(Guidance(e.seq, e.actor.id, p))
        if p.flow is not None:
            self.paused = p.flow == "pause"
        for d in p.avoid:
            self.avoided.add(d)
            if d in self.preferred:
                self.preferred.remove(d)
        for d in p.prefer:
            self.avoided.discard(d)
            if d not in self.preferred:
                self.preferred.append(d)


@dataclass
class GuidanceView:
    """What the Main weighs new directions by."""

    preferred: list[str] = field(default_factory=list)
    avoided: set[str] = field(default_factory=set)
    seqs: dict[str, int] = field(default_factory=dict)  # direction -> the guidance event that named it last


def guided_by(proj: Projection) -> GuidanceView:
    """The preferred and avoided directions in force, with the event that set each."""
    part = proj.part(GuidancePart)
    seqs: dict[str, int] = {}
    for g in part.given:
        for d in (*g.request.prefer, *g.request.avoid):
            seqs[d] = g.seq
    return GuidanceView(list(part.preferred), set(part.avoided), seqs)


def names(d: Direction) -> set[str]:
    """The names guidance may give a direction: its family, or its key (`family:method`)."""
    return {d.family, d.key()}


def operator_id() -> str:
    """The operating-system user running this process, as the ledger's actor id."""
    import pwd

    try:
        name = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        name = ""
    return name if NODE_ID.fullmatch(name) else f"uid-{os.geteuid()}"


def check_guidance(reader: RunReader, guidance: HumanGuidance | dict[str, object]) -> HumanGuidance:
    """The request as the event's payload, if the run takes it now (`reader` may be read-only), or
    GuidanceError saying in one line why not."""

    if isinstance(guidance, dict):
        try:
            guidance = HumanGuidance.model_validate(guidance)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise GuidanceError(f"guidance refused: {where + ': ' if where else ''}{err['msg']}") from None
    final = reader.final_seq()
    if final is not None:
        raise GuidanceError(f"guidance refused: the run has finished (its final record is event {final})")
    graph = load_graph(reader)
    if graph.settings is None:
        raise GuidanceError("guidance refused: not a campaign run (no orchestra.start): nothing reads guidance")
    if graph.stopped is not None:
        raise GuidanceError(
            f"guidance refused: the run has stopped launching ({graph.stopped.payload.reason}) and is ending"
        )
    known: set[str] = set()
    for direction in default_directions(reader.task, seed=graph.settings.seed):
        known |= names(direction)
    for name in (*guidance.prefer, *guidance.avoid):
        if name not in known:
            raise GuidanceError(f"guidance refused: unknown direction {name!r}; directions: {', '.join(sorted(known))}")
    both = set(guidance.prefer) & set(guidance.avoid)
    if both:
        raise GuidanceError(f"guidance refused: {', '.join(sorted(both))} both preferred and avoided")
    for w in guidance.stop_worker:
        node = graph.workers.get(w)
        if node is None:
            raise GuidanceError(
                f"guidance refused: no Worker {w!r} in the graph ({', '.join(graph.workers) or 'none'})"
            )
        if node.done:
            raise GuidanceError(f"guidance refused: Worker {w} has already finalized")
    return guidance


def give_guidance(expos: ExpOS, guidance: HumanGuidance | dict[str, object]) -> Event:
    """Record guidance in a running campaign (`expos` opened writable by the operator), or raise
    GuidanceError saying in one line why not, with nothing written."""
    guidance = check_guidance(expos.reader, guidance)
    user = operator_id()
    cap = capability_id(expos.issue(OPERATOR, user, ttl_s=60.0))
    return expos.record(Caller(OPERATOR, user, cap), guidance)


def guide_run(run_dir: Path | str, guidance: HumanGuidance | dict[str, object], key_dir: str | None = None) -> Event:
    """Check `guidance` against the run at `run_dir` on a read-only session, then record it: a
    refused request (or a path that is no run) writes nothing, not even the key directory's note
    of where the run lives."""
    with ExpOS.open(run_dir, key_dir=key_dir, writable=False) as expos:
        checked = check_guidance(expos.reader, guidance)
    with ExpOS.open(run_dir, key_dir=key_dir) as expos:
        return give_guidance(expos, checked)  # checked again: the run may have finished since


def answer_plainly(ctx: MainContext, g: Guidance, action: str = "continue", note: str = "", **detail: object) -> None:
    """The Main's decision on guidance `g`, citing it (its seq in the evidence and in `detail.guidance`,
    which marks it answered)."""
    rationale = g.summary() + (f"; {note}" if note else "; noted, the graph goes on as it is")
    ctx.call(
        "decision.record",
        {"action": action, "rationale": rationale, "evidence": [g.seq], "detail": {**detail, "guidance": g.seq}},
    )
