"""Main-agent tools: the research graph, review requests, decisions, nominations.
The Main agent never runs experiments."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..events import (
    LIST_MAX,
    CandidateNominate,
    DecisionRecord,
    JsonObject,
    Name,
    ReviewRequest,
    Text,
    WorkerAdd,
    dump_payload,
)
from ._context import ToolContext
from ._errors import ToolRefused
from ._registry import tool

if TYPE_CHECKING:
    from ._caller import Caller


class _In(BaseModel):
    # Strict: a number is a JSON number (no `"5"`, no `true` for 1), as the schema the agents read says.
    model_config = ConfigDict(extra="forbid", strict=True)


class GraphInput(_In):
    pass


class GraphView(BaseModel):
    workers: list[dict[str, Any]]
    reviews: list[dict[str, Any]]
    experiments: list[dict[str, Any]]
    decisions: int


@tool("graph.read", roles=("main",), kind="monitoring", input=GraphInput, result=GraphView)
def graph_read(ctx: ToolContext, caller: Caller, inp: GraphInput) -> GraphView:
    """The research graph: workers, reviews, and every experiment with its aggregate dev score."""
    st = ctx.state()
    exps = [
        {
            "experiment_id": x.id,
            "owner": x.owner,
            "parent": x.parent,
            "method": x.method,
            "status": x.status,
            "dev_score": x.dev_score(),
            "review_score": next((e.score for e in x.records() if e.split == "review"), None),
            "eval_seqs": {e.split: e.seq for e in x.records() if e.split != "final"},
            "config": {k: x.spec.get(k) for k in ("batch_size", "max_steps", "learning_rate")},
        }
        for x in st.experiments.values()
    ]

    def _fin(wid: str) -> Any:
        return st.finalized[wid].payload if wid in st.finalized else None

    workers = [
        {
            "worker_id": w.id,
            "task": w.task,
            "direction": w.direction,
            "predecessors": w.predecessors,
            "finalized": w.id in st.finalized,
            "summary": f.summary if (f := _fin(w.id)) else None,
            "recipe": f.recipe.model_dump(mode="json") if f and f.recipe else None,
        }
        for w in st.workers.values()
    ]
    reviews = [{**dump_payload(r.payload), "seq": r.seq, "reviewer": r.actor.id} for r in st.reviews]
    return GraphView(workers=workers, reviews=reviews, experiments=exps, decisions=len(st.decisions))


class AddWorkerInput(_In):
    worker_id: str = Field(pattern=r"^[a-z][a-z0-9_\-]{0,40}$", description="New Worker id (lower case).")
    task: Text = Field(min_length=1, description="The research task (a direction) in words.")
    direction: JsonObject = Field(
        default_factory=dict,
        description="Structured direction for programmatic "
        "workers (e.g. `family`, `method`, `config`); `agent` may name only the "
        "run's Worker agent.",
    )
    predecessors: list[Name] = Field(
        default_factory=list, max_length=LIST_MAX, description="Workers whose context it receives."
    )


class Added(BaseModel):
    seq: int


@tool("worker.add", roles=("main",), kind="deciding", input=AddWorkerInput, result=Added)
def worker_add(ctx: ToolContext, caller: Caller, inp: AddWorkerInput) -> Added:
    """Add a Worker node with its task and predecessors."""
    st = ctx.state()
    if inp.worker_id in st.workers:
        raise ToolRefused(f"worker {inp.worker_id} exists")
    missing = [p for p in inp.predecessors if p not in st.workers]
    if missing:
        raise ToolRefused(f"unknown predecessors {missing}")
    return Added(seq=ctx.record(caller, WorkerAdd(**inp.model_dump())).seq)


class ReviewRequestInput(_In):
    reviewer_id: str = Field(pattern=r"^[a-z][a-z0-9_\-]{0,40}$", description="New Reviewer id (lower case).")
    question: Text = Field(min_length=1, description="The question the review answers.")
    scope: list[Name] = Field(
        min_length=1, max_length=LIST_MAX, description="Worker ids whose experiments are the evidence."
    )


@tool("review.request", roles=("main",), kind="deciding", input=ReviewRequestInput, result=Added)
def review_request(ctx: ToolContext, caller: Caller, inp: ReviewRequestInput) -> Added:
    """Add a Reviewer node: a question and a scope of Workers."""
    st = ctx.state()
    missing = [w for w in inp.scope if w not in st.workers]
    if missing:
        raise ToolRefused(f"unknown workers in scope {missing}")
    return Added(seq=ctx.record(caller, ReviewRequest(**inp.model_dump())).seq)


class DecisionInput(_In):
    action: Literal["continue", "verify", "branch", "revise", "stop"] = Field(
        description="continue a direction, verify a result, branch into a new one, revise one, or stop the run."
    )
    rationale: Text = Field(min_length=1, description="Why, in words.")
    evidence: list[int] = Field(
        default_factory=list, max_length=LIST_MAX, description="Event sequence numbers it rests on."
    )
    detail: JsonObject = Field(default_factory=dict, description="Structured detail (free form).")
    answers: int | None = Field(default=None, ge=0, description="The event this decision answers, if any.")


@tool("decision.record", roles=("main",), kind="deciding", input=DecisionInput, result=Added)
def decision_record(ctx: ToolContext, caller: Caller, inp: DecisionInput) -> Added:
    """Record a decision with its rationale and the evidence it rests on."""
    size = ctx.ledger.size()
    if any(not 0 <= s < size for s in inp.evidence):
        raise ToolRefused("decision cites events that do not exist")
    if inp.answers is not None and inp.answers >= size:
        raise ToolRefused(f"decision answers event {inp.answers}, which does not exist")
    # An unset `answers` stays out of the stored body (a decision that answers no event).
    fields = inp.model_dump(exclude={"answers"} if inp.answers is None else set())
    return Added(seq=ctx.record(caller, DecisionRecord(**fields)).seq)


class NominateInput(_In):
    experiment_id: Name = Field(description="A completed experiment of the run.")


@tool("candidate.nominate", roles=("main",), kind="deciding", input=NominateInput, result=Added)
def candidate_nominate(ctx: ToolContext, caller: Caller, inp: NominateInput) -> Added:
    """Put an experiment forward for the harness's selection (the harness rule picks)."""
    x = ctx.state().experiments.get(inp.experiment_id)
    if x is None or x.status != "completed":
        raise ToolRefused(f"{inp.experiment_id} is not a completed experiment")
    return Added(seq=ctx.record(caller, CandidateNominate(**inp.model_dump())).seq)
