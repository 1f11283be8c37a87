"""What a Worker or Reviewer node is handed: its brief, built from the research graph where the
slot starts it (`worker_brief`, `reviewer_brief`), and a Worker's memory of its own trials.

A brief is the node's spec, not a record: the ledger holds the events it is built from (the
`worker.add`, the `review.request` and the finalizes in scope), so a resumed node gets the
same brief. An LLM agent reads it as JSON (`as_json`, the keys its prompts have always had).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..events import Claim
from ._directions import Direction
from ._graph import ResearchGraph

__all__ = ["Conclusion", "ReviewerBrief", "WorkerBrief", "reviewer_brief", "worker_brief"]


@dataclass(frozen=True)
class WorkerBrief:
    """A Worker's spec: the direction to explore, for the task the Main gave it."""

    task: str  # the Main's words for the Worker's task
    direction: Direction
    predecessors: list[str] = field(default_factory=list)  # Workers whose conclusions it builds on
    # This run's measurements of the machine (`run_timing`): seconds per step, per example, per
    # trial's overhead; empty until a trial finished.
    timing: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Conclusion:
    """A finalized Worker's conclusions, as the Reviewer must check them: claims, not evidence."""

    seq: int  # its `worker.finalize` event
    claims: list[Claim]
    candidates: list[str]  # the experiments it put forward
    summary: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "claims": [c.model_dump() for c in self.claims],
            "candidates": list(self.candidates),
            "summary": self.summary,
        }


@dataclass(frozen=True)
class ReviewerBrief:
    """A Reviewer's spec: the Main's question, the Workers in scope and their conclusions (a Worker
    in scope that has not finalized has none)."""

    question: str
    scope: list[str]
    seq: int  # the `review.request` it answers
    conclusions: dict[str, Conclusion] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)  # as `WorkerBrief.timing`


def worker_brief(graph: ResearchGraph, node: str, timing: dict[str, float] | None = None) -> WorkerBrief:
    """Worker `node`'s brief from the graph: the task and direction the Main gave it."""
    w = graph.workers[node]
    return WorkerBrief(w.task, w.direction.model_copy(deep=True), list(w.predecessors), dict(timing or {}))


def reviewer_brief(graph: ResearchGraph, node: str, timing: dict[str, float] | None = None) -> ReviewerBrief:
    """Reviewer `node`'s brief from the graph: the Main's question, the scope, and the conclusions
    (claims and candidates from the ledger) of each Worker in scope that finalized."""
    r = graph.reviewers[node]
    conclusions = {}
    for wid in r.scope:
        w = graph.workers.get(wid)
        if w is not None and w.finalize is not None and w.finalize_seq is not None:
            f = w.finalize
            conclusions[wid] = Conclusion(w.finalize_seq, list(f.claims), list(f.candidates), f.summary)
    return ReviewerBrief(r.question, list(r.scope), r.seq, conclusions, dict(timing or {}))
