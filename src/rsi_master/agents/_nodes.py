"""LLM-backed Worker and Reviewer nodes. Each runs one bounded agent loop in its slot
process over exactly its role's ExpOS tools; the role's finishing tool ends it.

A node whose model never finishes (turn or token limits, the deadline, a provider that
keeps failing) is ended by the harness with an explicit record: the Worker's finalize
or the Reviewer's report says that the agent did not finish and why. The Worker's claims
only what the ledger shows it completed and had scored on dev (at the recorded scores) and
puts the best of those forward; the Reviewer's verifies nothing. That record is an
orchestration event, so the Main agent is told and the run goes on.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from .. import _clock
from ..errors import RsiMasterError
from ..events import AgentEnd
from ..expos import ToolRefused, load_state, tools_for
from ..orchestra import BudgetEnd, NodeContext, ReviewerContext, WorkerContext, load_graph, reviewer_agent, worker_agent
from ._loop import AgentLoop, Outcome
from ._memory import brief_block, clip
from ._providers import make_model
from ._setup import recorded_role

__all__ = ["LLMReviewer", "LLMWorker"]

# Kept back from the node's deadline for the finishing call.
FINISH_MARGIN_S = 5.0


def _run(ctx: NodeContext[Any], role: str, finish: str, task: str, prepare: Any = None) -> Outcome:
    cfg, prompt = recorded_role(ctx.expos.reader, role)
    try:
        model = make_model(cfg, role)
    except RsiMasterError as exc:  # e.g. the key is not in this process's environment: end the node, say why
        ctx.expos.record(
            ctx.caller,
            AgentEnd(
                episode=role, reason="provider_error", finished=False, steps=0, tokens=0, cost_usd=0.0, error=str(exc)
            ),
        )
        return Outcome(False, "provider_error", error=str(exc))
    loop = AgentLoop(
        model=model,
        config=cfg,
        expos=ctx.expos,
        caller=ctx.caller,
        tools=tools_for(role),
        finish={finish},
        episode=role,
        deadline=ctx.deadline - FINISH_MARGIN_S,
        prepare=prepare,
    )
    try:
        return loop.run(prompt.text, task)
    except BudgetEnd:
        return Outcome(False, "budget_end")
    finally:
        model.close()


def _why(out: Outcome) -> str:
    return out.reason + (f": {out.error}" if out.error else "")


def _harness_finalize(ctx: WorkerContext, out: Outcome) -> dict[str, Any]:
    """The finalize of a Worker whose agent did not finalize, from the ledger alone.

    An experiment that completed and was scored on dev before the allowance ended (the budget's
    end a moment later, the last turn or token spent on it) is the Worker's result all the
    same, as it is for the programmatic Worker: each is claimed at its recorded score, and the
    best is put forward. Nothing else is: the harness invents no conclusion."""

    own = [x for x in load_state(ctx.expos.reader).experiments.values() if x.owner == ctx.caller.id]
    scored = [x for x in own if x.status == "completed" and x.dev_score() is not None]
    others = [f"{x.id} ({x.status if x.status != 'completed' else 'no dev score'})" for x in own if x not in scored]
    head = f"[ended by the harness: the Worker agent did not finalize ({_why(out)})]"
    if not scored:
        return {
            "summary": f"{head} its experiments stay in the ledger; nothing is claimed or put forward"
            + (f" (not completed and scored: {', '.join(others)})" if others else ""),
            "claims": [],
            "candidates": [],
        }
    best = max(scored, key=lambda x: (x.dev_score(), -x.seq))  # ties: the earliest
    scores = ", ".join(f"{x.id}={x.dev_score():.4f}" for x in scored)
    return {
        "summary": f"{head} completed and scored on dev: {scores}; put forward: {best.id}, the best dev score"
        + (f"; not completed and scored: {', '.join(others)}" if others else ""),
        "claims": [{"experiment_id": x.id, "score": x.dev_score()} for x in scored],
        "candidates": [best.id],
    }


def _conclusion(w: Any) -> str:
    """A predecessor's final summary (prose) and its typed recipe, as the agent reads them."""
    f = w.finalize
    if f is None:
        return ""
    return f.summary + (f"\n  recipe: {f.recipe.model_dump_json(exclude_defaults=True)}" if f.recipe else "")


@worker_agent("llm")
class LLMWorker:
    def run(self, ctx: WorkerContext) -> None:

        graph = load_graph(ctx.expos.reader)
        me = graph.workers.get(ctx.caller.id)
        preds = me.predecessors if me else list(ctx.brief.predecessors)
        # Only the designated predecessors' summaries: the context edges of the graph.
        summaries = {p: _conclusion(graph.workers[p]) for p in preds if p in graph.workers}
        c = ctx.expos.contract
        brief = {
            "worker_id": ctx.caller.id,
            "task": ctx.brief.task,
            "capability": c.capability,
            "direction": ctx.brief.direction.model_dump(mode="json"),
            "families": sorted(g.split("/", 1)[-1] for g in c.allowed_generators),
            "predecessors": preds,
            "seconds_left": int(max(0.0, ctx.time_left())),
        }
        parts = [f"Your research task: {ctx.brief.task}", brief_block(brief)]
        if summaries:
            parts.append(
                "Your predecessors' final summaries (their claims were checked against the records):\n"
                + "\n".join(f"- {p}: {clip(s, 3000)}" for p, s in summaries.items())
            )
        if ctx.memory:
            parts.append(
                "You were interrupted and resumed. Your earlier experiments:\n"
                + "\n".join(
                    json.dumps(
                        {k: getattr(m, k) for k in ("experiment_id", "status", "dev_score", "parent", "spec")},
                        sort_keys=True,
                        default=str,
                    )
                    for m in ctx.memory
                )
            )
        out = _run(ctx, "worker", "worker.finalize", "\n\n".join(parts))
        if not out.finished:
            with contextlib.suppress(ToolRefused):  # it had finalized after all (the refusal is recorded)
                ctx.call("worker.finalize", _harness_finalize(ctx, out))


@reviewer_agent("llm")
class LLMReviewer:
    def run(self, ctx: ReviewerContext) -> None:
        b = ctx.brief
        brief = {
            "question": b.question,
            "scope": list(b.scope),
            "request_seq": b.seq,
            "conclusions": {w: c.as_json() for w, c in b.conclusions.items()},
            "candidates": [x for c in b.conclusions.values() for x in c.candidates],
            "finalize_seqs": [c.seq for c in b.conclusions.values()],
            "seconds_left": int(max(0.0, ctx.time_left())),
        }
        task = (
            f"Review question: {b.question}\nScope: {', '.join(b.scope)}. The Workers' "
            f"conclusions to check are below (their summaries are claims, not evidence).\n\n" + brief_block(brief)
        )

        def prepare(tool: str, args: dict[str, Any]) -> dict[str, Any]:
            if tool == "review.submit":  # which request it answers is the harness's fact, not the model's
                args = {**args, "request_seq": b.seq}
                args.setdefault("scope", list(b.scope))
            return args

        started = _clock.now()
        out = _run(ctx, "reviewer", "review.submit", task, prepare)
        if not out.finished:
            with contextlib.suppress(ToolRefused):
                ctx.call(
                    "review.submit",
                    {
                        "request_seq": b.seq,
                        "scope": list(b.scope),
                        "verdict": "fail",
                        "uncertainties": [
                            f"[ended by the harness after {_clock.now() - started:.0f}s: the Reviewer "
                            f"agent did not submit a review ({_why(out)})]; nothing was verified"
                        ],
                        "evidence": [],
                    },
                )
