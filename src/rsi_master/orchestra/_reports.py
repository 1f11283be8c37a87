"""What the orchestra (the Main, the live display) reads of the agents' messages in the
graph, as typed fields: a Worker's candidates and recipe, a Reviewer's verdict, findings
and recommendations. Nothing here parses prose."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..events._messages import Combine, Continue, Finding, Recipe, Recommendation, Revise, Stop, Verdict
from ._graph import ResearchGraph, WorkerNode

__all__ = ["best_review_score", "candidates", "findings", "recipe", "recommendations", "stopped", "verdict",
           "violations"]

_RECOMMENDATION: TypeAdapter[Any] = TypeAdapter(Recommendation)


def candidates(w: WorkerNode) -> list[str]:
    return list((w.finalize or {}).get("candidates", []))


def recipe(w: WorkerNode) -> Recipe | None:
    raw = (w.finalize or {}).get("recipe")
    return Recipe.model_validate(raw) if raw else None


def verdict(r: Any) -> Verdict | None:
    return (r.report or {}).get("verdict")  # type: ignore[no-any-return]


def violations(r: Any) -> list[str]:
    return list((r.report or {}).get("violations", []))


def recommendations(r: Any) -> list[Continue | Combine | Revise | Stop]:
    out = []
    for x in (r.report or {}).get("recommendations", []):
        try:
            out.append(_RECOMMENDATION.validate_python(x))
        except ValidationError:
            continue  # a v1 record's prose recommendation: not an instruction the Main can act on
    return out


def findings(r: Any) -> list[Finding]:
    return [Finding.model_validate(f) for f in (r.report or {}).get("findings", [])]


def best_review_score(graph: ResearchGraph) -> float | None:
    """The best `review` score a finished review's supported findings show (the live display's)."""
    scores = [f.score for r in graph.reviewers.values() for f in findings(r)
              if f.status == "supported" and f.split == "review" and f.score is not None]
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
