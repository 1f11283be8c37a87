"""The parts `PolicyMain` is composed of where its configurations differ: who counts as verified
(`Verifier`) and what is nominated at the end (`Nomination`). The bench's ablations are
configurations of these (`bench/_mains.py`), not subclasses of the policy.

Also the records the parts hand each other (a `Candidate` to build on, a review's `Lead`, a
`Plan` before it is recorded) and the two small helpers every part shares: recording a
decision, and a free node id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from ._graph import ResearchGraph, ReviewerNode, WorkerNode
from ._protocols import MainContext

__all__ = ["Candidate", "Lead", "Nomination", "Plan", "PlanStep", "Verifier", "decide", "free_id"]


class Candidate(NamedTuple):
    """A checkpoint the Main may build on: what the verifier counts as verified."""

    experiment_id: str
    worker_id: str
    score: float  # its `review` score (claimed `dev` score where claims stand for reviews)
    seq: int  # the record that carries the score (the evidence a decision cites)


class Lead(NamedTuple):
    """The best candidate in a review's scope."""

    experiment_id: str
    score: float  # its `review` score
    worker: WorkerNode


class Plan(NamedTuple):
    """A decision a plan took (its Workers or review already added), before it is recorded."""

    action: str  # branch | revise | continue | verify
    rationale: str
    evidence: list[int]  # the seqs the decision cites
    detail: dict[str, Any]  # the decision's `detail` in the ledger (workers added, review answered, ...)

    def noted(self, note: str, evidence: list[int] | None = None) -> Plan:
        """The same plan, its rationale extended by `note` (and its evidence by `evidence`)."""
        ev = sorted({*self.evidence, *evidence}) if evidence is not None else self.evidence
        return self._replace(rationale=self.rationale + note, evidence=ev)


# One of the policy's plans: a decision when it has one to take now, else None.
PlanStep = Callable[[MainContext, ResearchGraph], Plan | None]


class Verifier(Protocol):
    """Which finalized candidates the Main treats as verified, and how it gets them verified."""

    def request(self, ctx: MainContext, graph: ResearchGraph, late: bool, tie_s: float) -> Plan | None:
        """Ask for a verification when one is due (a cross-Worker review), else None. `late`: the
        budget is mostly spent (selection needs comparisons); `tie_s`: as for `verified`."""

    def verified(self, ctx: MainContext, graph: ResearchGraph, tie_s: float) -> list[Candidate]:
        """The candidates to build on, best first; ties are broken by what a lineage is expected
        to reach from `tie_s` more seconds of a Worker."""

    def stands_for_review(self, graph: ResearchGraph, direction_key: str) -> bool:
        """The direction counts as reviewed for its budget share although no review passed it."""


class Nomination(Protocol):
    """What the Main nominates for the harness's selection when the run ends, and the stop decision."""

    def nominate(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None: ...


def decide(
    ctx: MainContext,
    action: str,
    rationale: str,
    evidence: list[int],
    detail: dict[str, Any],
    answers: int | None = None,
) -> None:
    """Record one decision of the Main; `answers` is the event it answers, if any."""
    args: dict[str, Any] = {
        "action": action,
        "rationale": rationale,
        "evidence": sorted({int(s) for s in evidence if s is not None}),
        "detail": detail,
    }
    if answers is not None:
        args["answers"] = answers
    ctx.call("decision.record", args)


def free_id(graph: ResearchGraph, prefix: str) -> str:
    """The first `w<i>` or `r<i>` no node holds; a Reviewer id is held from now on (a placeholder
    node), so that two reviews requested in one event get two ids."""
    taken = set(graph.workers) | set(graph.reviewers)
    i = 1
    while f"{prefix}{i}" in taken:
        i += 1
    if prefix == "r":
        graph.reviewers.setdefault(f"r{i}", ReviewerNode(f"r{i}", -1, "", []))
    return f"{prefix}{i}"
