"""What the orchestra (the Main, the live display) reads of the agents' messages in the
graph, as typed fields: a Worker's candidates and recipe, a Reviewer's verdict, findings
and recommendations, and the evidence each rests on. Nothing here parses prose: a schema-v1
report's prose recommendation is not an instruction, and is passed over.

A finding is weighed by its test (`Significance`): a recommendation whose test does not carry it
at `ALPHA` is not acted on (one without a test, from a schema v1/v2 record or an agent that ran
none, is acted on as before); a review that failed on one Worker's claims still verifies the
other Workers in its scope; a Worker whose claim a fresh measurement contradicted has its claims
weighed less (`claim_weights`)."""

from __future__ import annotations

from collections.abc import Iterable

from ..events import (
    Combine,
    Continue,
    Finding,
    Recipe,
    ReviewSubmit,
    Revise,
    Significance,
    Stop,
    Verdict,
    WorkerFinalize,
)
from ._graph import ResearchGraph, ReviewerNode, WorkerNode
from ._stats import ALPHA

__all__ = [
    "OVERCLAIM_WEIGHT",
    "best_review_score",
    "best_supported_score",
    "candidates",
    "carried",
    "claim_weights",
    "cleared",
    "finalization",
    "findings",
    "gains",
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


# The weight of a Worker's claims after each claim a fresh measurement contradicted: its points
# count as measured on this share of their items.
OVERCLAIM_WEIGHT = 0.25


def carried(x: Continue | Combine) -> bool:
    """Whether a recommendation's test carries it at `ALPHA` (untested: acted on as before)."""
    return x.significance is None or x.significance.p < ALPHA


def cleared(graph: ResearchGraph) -> set[str]:
    """Workers a finished review verified: every Worker in a passing review's scope, and those of
    a failed review's scope that none of its unsupported typed findings names (another Worker's
    overclaim or flagged candidate does not discredit their records)."""
    out: set[str] = set()
    for r in graph.reviewers.values():
        if not r.done:
            continue
        if verdict(r) == "pass":
            out |= set(r.scope)
            continue
        typed = findings(r)
        if not any(f.kind == "score" for f in typed):
            continue  # a v1/v2 report, or nothing was measured: the whole scope failed
        named = {w for f in typed if f.status == "unsupported" for w in f.worker_ids}
        flagged = {x for f in typed if f.status == "unsupported" for x in f.experiment_ids}
        out |= {
            w for w in r.scope if w not in named and (wn := graph.workers.get(w)) and not set(candidates(wn)) & flagged
        }
    return out


def gains(graph: ResearchGraph) -> dict[str, Significance]:
    """Experiment -> the test of its last step's gain, from the latest finished review that ran one."""
    out: dict[str, Significance] = {}
    for r in sorted(graph.reviewers.values(), key=lambda r: r.report_seq or 0):
        if r.done:
            for f in findings(r):
                if f.kind == "gain" and f.significance is not None and f.experiment_ids:
                    out[f.experiment_ids[0]] = f.significance
    return out


def claim_weights(graph: ResearchGraph) -> dict[str, float]:
    """Worker -> the weight of its claims, below 1 for a Worker whose claim a finished review found
    beyond the noise of a fresh measurement (`OVERCLAIM_WEIGHT` per such claim)."""
    out: dict[str, float] = {}
    for r in graph.reviewers.values():
        if r.done:
            for f in findings(r):
                if f.kind == "claim" and f.status == "unsupported":
                    for w in f.worker_ids:
                        out[w] = out.get(w, 1.0) * OVERCLAIM_WEIGHT
    return out
