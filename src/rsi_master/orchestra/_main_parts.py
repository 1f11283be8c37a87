"""The parts `PolicyMain` is composed of where its configurations differ: who counts as verified
(`Verifier`) and what is nominated at the end (`Nomination`). The bench's ablations are
configurations of these (`bench/_mains.py`), not subclasses of the policy.

Also the two small helpers every part shares: recording a decision, and a free node id.
"""

from __future__ import annotations

from typing import Any, Protocol

from ._graph import ResearchGraph, ReviewerNode
from ._protocols import MainContext

__all__ = ["Nomination", "Plan", "Verified", "Verifier", "decide", "free_id"]

# (experiment, Worker, score, evidence seq) of a checkpoint the Main may build on.
Verified = tuple[str, str, float, int]
# (action, rationale, evidence seqs, detail) of a decision a plan took, before it is recorded.
Plan = tuple[str, str, list[int], dict[str, Any]]


class Verifier(Protocol):
    """Which finalized candidates the Main treats as verified, and how it gets them verified."""

    def request(self, ctx: MainContext, graph: ResearchGraph, late: bool, tie_s: float) -> Plan | None:
        """Ask for a verification when one is due (a cross-Worker review), else None. `late`: the
        budget is mostly spent (selection needs comparisons); `tie_s`: as for `verified`."""

    def verified(self, ctx: MainContext, graph: ResearchGraph, tie_s: float) -> list[Verified]:
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
