"""What a report shows of one run: typed records read off the run's projection, verify and audit.

One schema feeds the HTML page (embedded as JSON for the node panel), the overview table and
`rsi-master report --json`; nothing below re-describes a ledger record by hand."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AuditView",
    "BlockedView",
    "CurvePoint",
    "DecisionView",
    "ExperimentView",
    "JobView",
    "NodeView",
    "ReviewView",
    "RunView",
    "StepView",
    "ToolCallView",
    "VerifyView",
]

VERSION = 1


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class VerifyView(_Record):
    ok: bool = Field(description="Whether `verify` found nothing wrong.")
    events: int = Field(description="Events in the ledger.")
    checkpoints: int = Field(description="Signed Merkle checkpoints.")
    unsigned_tail: int = Field(description="Events after the last kept checkpoint.")
    artifacts: int = Field(description="Artifacts re-hashed.")
    root: str | None = Field(description="Merkle root of the last signed checkpoint.")
    head: str | None = Field(description="Hash of the last event.")
    witness: str | None = Field(description="The operator's witness file checked against.")
    problems: list[str] = Field(description="What verify found wrong, first first.")
    notes: list[str] = Field(description="What verify noted without failing.")


class EvalView(_Record):
    seq: int = Field(description="The eval.record event.")
    split: str = Field(description="dev, review or final.")
    score: float = Field(description="The sealed evaluator's score.")
    at_s: float = Field(description="Budget seconds spent when it was recorded.")


class ExperimentView(_Record):
    id: str = Field(description="Experiment id (exp-NNNNN, the seq of its start).")
    owner: str = Field(description="The node that ran it.")
    status: str = Field(description="running, completed, failed or interrupted.")
    method: str = Field(description="Training method.")
    parent: str = Field(description="The experiment it continues from, or `base`.")
    lineage_root: str = Field(description="The experiment of its lineage trained from the base model.")
    dataset: str = Field(description="Digest of the training data.")
    recipe: dict[str, Any] = Field(description="The training spec as recorded at its start.")
    steps: int | None = Field(description="Optimizer steps taken.")
    checkpoint: str | None = Field(description="Digest of the checkpoint it produced.")
    error: str | None = Field(description="Why it failed, if it did.")
    evals: list[EvalView] = Field(description="Its checkpoint's evaluations.")
    start_s: float = Field(description="Budget seconds at its start.")
    finish_s: float | None = Field(description="Budget seconds at its finish.")

    def score(self, split: str) -> float | None:
        """The first recorded score of this checkpoint on `split`."""
        return next((e.score for e in self.evals if e.split == split), None)


class ToolCallView(_Record):
    name: str
    arguments: str
    status: str
    error: str | None


class StepView(_Record):
    seq: int = Field(description="The agent.step event.")
    episode: str
    index: int
    content: str | None
    tool_calls: list[ToolCallView]
    tokens: int


class ReviewView(_Record):
    seq: int = Field(description="The review.submit event.")
    verdict: str
    supported: list[str]
    uncertainties: list[str]
    violations: list[str]
    regressions: list[str]
    missing_comparisons: list[str]
    recommendations: list[str]
    evidence: list[int]


class DecisionView(_Record):
    seq: int = Field(description="The decision.record event.")
    action: str = Field(description="continue, verify, branch, revise or stop.")
    rationale: str
    evidence: list[int] = Field(description="Event seqs the decision cites.")
    nodes: list[str] = Field(description="Nodes the decision names (added, answered or scoped).")
    at_s: float = Field(description="Budget seconds when it was recorded.")


class NodeView(_Record):
    id: str
    kind: Literal["worker", "reviewer"]
    seq: int = Field(description="The event that added it.")
    task: str = Field(description="A Worker's task or a Reviewer's question.")
    direction: dict[str, Any] = Field(description="A Worker's direction as recorded (empty for a Reviewer).")
    links: list[str] = Field(description="A Worker's predecessors, or a Reviewer's scope.")
    done: bool
    summary: str | None = Field(description="A Worker's finalize summary.")
    candidates: list[str] = Field(description="Experiments a Worker put forward.")
    experiments: list[ExperimentView]
    review: ReviewView | None
    transcript: list[StepView] = Field(description="An LLM agent's turns (empty for a programmatic one).")


class JobView(_Record):
    node: str
    kind: str
    slot: int
    start_s: float
    end_s: float
    status: str | None


class BlockedView(_Record):
    seq: int
    actor: str
    tool: str | None
    subcategory: str | None
    reason: str


class AuditView(_Record):
    submissions: int
    hacking_rate: float
    interception_rate: float | None
    blocked_attempts: int
    executed_violations: int
    flagged: list[str]
    run_dir_issues: list[str]
    blocked_by_subcategory: dict[str, int]
    observations: dict[str, dict[str, int]] = Field(description="subcategory -> observation -> submissions.")
    blocked: list[BlockedView]


class CurvePoint(_Record):
    at_s: float
    score: float
    experiment: str


class RunView(_Record):
    """Everything a report page shows of one run."""

    version: int = VERSION
    run_dir: str
    run_id: str | None
    problems: list[str] = Field(description="Why the run is not what it claims: verify's problems, unreadable events.")
    verify: VerifyView | None
    task: str | None
    backend: str | None
    base_model: str | None = Field(description="Digest of the base model's artifact.")
    model: str | None = Field(description="The base model as given (`--model`), or `shipped` for the built-in one.")
    agents: dict[str, str] = Field(description="role -> agent, from the run's settings.")
    budget_s: float | None
    spent_s: float | None
    slots: int | None
    finished: bool
    summary: dict[str, Any] = Field(description="The harness's stored summary (empty before the run's finish).")
    trust_boundary: str
    nodes: list[NodeView]
    edges: list[tuple[str, str, str]] = Field(description="(from, to, context|scope).")
    decisions: list[DecisionView]
    main_transcript: list[StepView]
    best: dict[str, list[CurvePoint]] = Field(description="split -> best-so-far score against budget.")
    lineages: dict[str, list[CurvePoint]] = Field(description="lineage root -> dev scores against budget.")
    jobs: list[JobView]
    tool_calls_by_fifth: list[dict[str, int]]
    audit: AuditView | None
    selected: str | None
    selected_lineage: list[ExperimentView] = Field(
        description="The selected checkpoint back to the base, newest first."
    )
    size: int | None = Field(default=None, description="Events read into this view.")
    checked_at: int | None = Field(
        default=None, description="Events the verify and audit shown covered (fewer than `size` on a live page)."
    )
