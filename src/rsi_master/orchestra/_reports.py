"""What the orchestra (the Main, the live display) reads of the agents' messages in the
graph, as typed fields: a Worker's candidates and recipe, a Reviewer's verdict, findings
and recommendations. Nothing here parses prose: a schema-v1 report's prose recommendation
is not an instruction, and is passed over."""

from __future__ import annotations

from collections.abc import Iterable

from ..events import Combine, Continue, Finding, Recipe, ReviewSubmit, Revise, Stop, Verdict, WorkerFinalize
from ._graph import ResearchGraph, ReviewerNode, WorkerNode

__all__ = [
    "best_review_score",
    "best_supported_score",
    "candidates",
    "finalization",
    "findings",
    "recipe",
    "recommendations",
    "report",
    "stopped",
    "verdict",
    "violations",
]


def finalization(w: WorkerNode) -> WorkerFinalize | None:
    """A Worker's `worker.finalize` payload (None until it finalized)."""
    return w.finalize


def report(r: ReviewerNode) -> ReviewSubmit | None:
    """A Reviewer's `review.submit` payload (None until it reported)."""
    return r.report


def candidates(w: WorkerNode) -> list[str]:
    f = finalization(w)
    return list(f.candidates) if f else []


def recipe(w: WorkerNode) -> Recipe | None:
    f = finalization(w)
    return f.recipe if f else None


def verdict(r: ReviewerNode) -> Verdict | None:
    p = report(r)
    return p.verdict if p else None


def violations(r: ReviewerNode) -> list[str]:
    p = report(r)
    return list(p.violations) if p else []


def findings(r: ReviewerNode) -> list[Finding]:
    p = report(r)
    return list(p.findings) if p else []


def recommendations(r: ReviewerNode) -> list[Continue | Combine | Revise | Stop]:
    p = report(r)
    return [x for x in (p.recommendations if p else []) if not isinstance(x, str)]


def best_review_score(graph: ResearchGraph) -> float | None:
    """The best `review` score a finished review's supported findings show (the live display's)."""
    return best_supported_score(r.report for r in graph.reviewers.values())


def best_supported_score(reports: Iterable[ReviewSubmit | None]) -> float | None:
    """The best `review` score among the supported findings of these reports."""
    scores = [
        f.score
        for p in reports
        if p is not None
        for f in p.findings
        if f.status == "supported" and f.split == "review" and f.score is not None
    ]
    return max(scores, default=None)


def stopped(graph: ResearchGraph) -> set[str]:
    """Experiments and Workers a finished review said to train no further (`Stop`)."""
    out: set[str] = set()
    for r in graph.reviewers.values():
        if r.done:
            for x in recommendations(r):
                if isinstance(x, Stop):
                    out |= {*x.experiment_ids, *x.worker_ids}
    return out
