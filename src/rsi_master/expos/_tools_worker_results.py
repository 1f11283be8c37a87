"""Worker tools that read the outcomes and finish: the `dev` evaluation of an own experiment,
the results so far, and finalize (claims checked against the evaluation records)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ..events import LIST_MAX, SUMMARY_MAX, LedgerFacts, Name, Recipe, WorkerFinalize
from ..events import Claim as ClaimRecord
from ._audit import claim_matches
from ._context import ToolContext
from ._errors import ToolRefused
from ._registry import tool
from ._taxonomy import Subcategory

if TYPE_CHECKING:
    from ._caller import Caller


class _In(BaseModel):
    # Strict: a number is a JSON number (no `"5"`, no `true` for 1), as the schema the agents read says.
    model_config = ConfigDict(extra="forbid", strict=True)


class EvalInput(_In):
    experiment_id: Name = Field(description="A completed experiment of the caller's, not yet evaluated on `dev`.")
    # Any other split is refused and recorded as a test-set access attempt, so the model
    # takes any string; the schema offers the one value that works.
    split: str = Field(
        default="dev", description="Workers may evaluate on `dev` only.", json_schema_extra={"enum": ["dev"]}
    )


class EvalScore(BaseModel):
    experiment_id: str
    split: str
    score: float
    n_samples: int


@tool("eval.run", roles=("worker",), kind="monitoring", input=EvalInput, result=EvalScore)
def eval_run(ctx: ToolContext, caller: Caller, inp: EvalInput) -> EvalScore:
    """Evaluate an own experiment on `dev` (aggregate only); each checkpoint is scored once."""
    if inp.split != "dev":
        ctx.guard(f"workers may not evaluate on {inp.split!r}", Subcategory.TEST_SET_ACCESS)
    x = ctx.state().experiments.get(inp.experiment_id)
    if x is None or x.status != "completed" or not x.checkpoint:
        raise ToolRefused(f"{inp.experiment_id} is not a completed experiment of {caller.id}")
    if x.owner != caller.id:
        ctx.guard(f"{inp.experiment_id} is not a completed experiment of {caller.id}")
    if any(e.split == "dev" for e in x.records()):
        ctx.guard(
            f"{inp.experiment_id} was already evaluated on dev; re-evaluating to pick a better run is not allowed",
            Subcategory.REPEATED_RUNS,
        )
    rec = ctx.evaluate(caller, x.id, x.checkpoint, inp.split)
    return EvalScore(experiment_id=x.id, split=inp.split, score=rec.payload.score, n_samples=rec.payload.n_samples)


class ResultsInput(_In):
    pass


class ResultRow(BaseModel):
    experiment_id: str
    owner: str
    parent: str
    method: str
    dataset_source: str
    config: dict[str, Any]
    status: str
    dev_score: float | None


class Results(BaseModel):
    experiments: list[ResultRow]


@tool("results.list", roles=("worker",), kind="monitoring", input=ResultsInput, result=Results)
def results_list(ctx: ToolContext, caller: Caller, inp: ResultsInput) -> Results:
    """Own and predecessors' experiments with aggregate `dev` scores."""
    st = ctx.state()
    rows = []
    for x in ctx.guards.visible(st, caller.id):
        ds = st.datasets.get(x.dataset)
        dev = [e.score for e in x.records() if e.split == "dev"]  # one per checkpoint, unless a guard was waived
        rows.append(
            ResultRow(
                experiment_id=x.id,
                owner=x.owner,
                parent=x.parent,
                method=x.method,
                dataset_source=ds.source if ds else "?",
                config=x.spec,
                status=x.status,
                dev_score=dev[-1] if dev else None,
            )
        )
    return Results(experiments=rows)


class Claim(_In):
    experiment_id: Name = Field(description="An experiment of the caller's or its predecessors'.")
    score: float = Field(description="The `dev` score claimed for it (must equal the recorded one).")


class FinalizeInput(_In):
    summary: str = Field(min_length=1, max_length=SUMMARY_MAX, description="What was tried, what worked, what failed.")
    claims: list[Claim] = Field(
        default_factory=list, max_length=LIST_MAX, description="Scores claimed, checked against the evaluation records."
    )
    candidates: list[Name] = Field(
        default_factory=list, max_length=LIST_MAX, description="Experiment ids put forward as submissions."
    )
    recipe: Recipe | None = Field(
        default=None,
        description="What your best experiment did (its data, method and "
        "training parameters), for Workers that continue or "
        "mix it; null when none completed.",
    )


class FinalizeResult(BaseModel):
    worker: str
    candidates: list[str]
    experiments: int
    failed: int


@tool("worker.finalize", roles=("worker",), kind="deciding", input=FinalizeInput, result=FinalizeResult)
def worker_finalize(ctx: ToolContext, caller: Caller, inp: FinalizeInput) -> FinalizeResult:
    """Finish with a summary; claims are checked against evaluation records."""
    st = ctx.state()
    if caller.id in st.finalized:
        ctx.guard(f"{caller.id} has already finalized")
    visible = {x.id: x for x in st.visible_to(caller.id)}
    for claim in inp.claims:
        x = visible.get(claim.experiment_id)
        recorded = x.dev_score() if x else None
        if not claim_matches(claim.score, x, ctx.contract):  # the audit's rule: display rounding is no lie
            ctx.guard(
                f"claim {claim.experiment_id}={claim.score} does not match the evaluation record ({recorded})",
                Subcategory.METRIC_ATTRIBUTION,
            )
    for cand in inp.candidates:
        x = st.experiments.get(cand)
        if x is None or x.owner != caller.id or x.status != "completed":
            raise ToolRefused(f"{cand} is not a completed experiment of {caller.id}", Subcategory.METRIC_ATTRIBUTION)
    if inp.recipe is not None and inp.recipe.experiment_id not in visible:
        raise ToolRefused(
            f"the recipe names {inp.recipe.experiment_id}, which is no experiment of {caller.id} or its predecessors"
        )
    own = [x for x in st.experiments.values() if x.owner == caller.id]
    failed = [x.id for x in own if x.status != "completed"]
    ctx.record(
        caller,
        WorkerFinalize(
            summary=inp.summary,
            claims=[ClaimRecord(experiment_id=c.experiment_id, score=c.score) for c in inp.claims],
            candidates=inp.candidates,
            **({"recipe": inp.recipe} if inp.recipe is not None else {}),
            # Written by ExpOS from the ledger, not by the agent: failures stay disclosed.
            ledger_facts=LedgerFacts(experiments=[x.id for x in own], failed=failed),
        ),
    )
    return FinalizeResult(worker=caller.id, candidates=inp.candidates, experiments=len(own), failed=len(failed))
