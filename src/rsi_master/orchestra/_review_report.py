"""A review as the programmatic Reviewer builds it: each checked statement once, as a typed
`Finding` and as a line of the prose list it belongs to, plus the typed recommendations and the
evidence seqs it cites; `submission` is the `review.submit` input."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..events import Combine, Continue, Finding, FindingKind, Revise, Significance, Stop

__all__ = ["Report"]

Prose = Literal["supported", "uncertainties", "violations", "regressions"]
Status = Literal["supported", "unsupported", "uncertain"]


@dataclass
class Report:
    supported: list[str] = field(default_factory=list)
    uncertainties: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)
    missing_comparisons: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    recommendations: list[Continue | Combine | Revise | Stop] = field(default_factory=list)
    evidence: list[int] = field(default_factory=list)
    review_seq: dict[str, list[int]] = field(default_factory=dict)  # experiment -> its review record seq
    n_review: dict[str, int] = field(default_factory=dict)  # experiment -> items it was scored on
    outcomes: dict[str, dict[str, bool]] = field(default_factory=dict)  # experiment -> item -> right on review

    def add(
        self,
        prose: Prose,
        claim: str,
        status: Status,
        kind: FindingKind,
        experiments: list[str],
        workers: list[str] | None = None,
        evidence: list[int] | None = None,
        split: Literal["dev", "review"] | None = None,
        score: float | None = None,
        significance: Significance | None = None,
    ) -> None:
        """One checked statement, in the prose list `prose` (for people) and as a `Finding`."""
        getattr(self, prose).append(claim)
        self.findings.append(
            Finding(
                claim=claim,
                status=status,
                kind=kind,
                experiment_ids=experiments,
                worker_ids=workers or [],
                evidence=evidence or [],
                split=split,
                score=score,
                significance=significance,
            )
        )

    def submission(self, request_seq: int | None, scope: list[str], verdict: str) -> dict[str, Any]:
        return {
            "request_seq": request_seq,
            "scope": scope,
            "verdict": verdict,
            "supported": self.supported,
            "uncertainties": self.uncertainties,
            "violations": self.violations,
            "regressions": self.regressions,
            "missing_comparisons": self.missing_comparisons,
            "findings": [f.model_dump(mode="json") for f in self.findings],
            "recommendations": [x.model_dump(mode="json") for x in self.recommendations],
            "evidence": sorted(set(self.evidence)),
        }
