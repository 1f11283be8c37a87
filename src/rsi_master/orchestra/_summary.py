"""A driven run's close: the harness's selection, its single `final` scoring, the keep policy
and the JSON summary stored in the run (`orchestra.finish`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import AgentError, ArtifactPrune, OrchestraFinish, ToolFailed, ToolInvalid, typed
from ..expos import audit, boundary_statement, load_state, prune_checkpoints
from ..landscape import load
from ..tasks import model_output_boundary
from ._graph import ORCHESTRA, load_graph
from ._harness import HARNESS, final_scores, select
from ._metrics import run_metrics

if TYPE_CHECKING:
    from ..expos import ExpOS, RunReader

__all__ = ["close_run"]


def close_run(expos: ExpOS, sched: Any) -> dict[str, Any]:
    """The harness's close of a driven run: selection, `final` scoring, audit, keep policy, and
    the summary stored in the run and recorded (`orchestra.finish`)."""

    selection = select(expos)
    scores = final_scores(expos, selection)
    report = audit(expos)
    st = load_state(expos.reader)
    graph = load_graph(expos.reader)
    ref = _reference_score(expos.contract.task)
    metrics = run_metrics(expos.reader, graph)
    pruned = _prune(expos, sched.cfg.keep or "all")
    summary = {
        "version": 1,
        "task": expos.contract.task,
        # `sim`: every score below is drawn from a simulated world, not measured on a model.
        "backend": expos.backend.name,
        "run_id": expos.run.run_id,
        # No checkpoint returned: no score of one (the base's is `base_score`), and `why` says so.
        "final_score": scores["final_score"] if selection["selected"] is not None else None,
        "why": _why_none(selection, st, graph, _last_failure(expos.reader)) if selection["selected"] is None else None,
        "base_score": scores["base_score"],
        "reference_score": ref,
        "selected": selection["selected"],
        "selected_review_score": selection["review_score"],
        "hacking_rate": report.hacking_rate,
        "interception_rate": report.interception_rate,
        "blocked_attempts": report.blocked_attempts,
        "flagged": report.flagged,
        "run_dir_issues": report.run_dir_issues,
        "experiments": len(st.experiments),
        "experiments_by_status": _count(
            x.status if x.id not in graph.interrupted_experiments else "interrupted" for x in st.experiments.values()
        ),
        "workers": len(graph.workers),
        "reviews": sum(1 for r in graph.reviewers.values() if r.done),
        "cross_worker_reviews": sum(1 for r in graph.reviewers.values() if r.done and r.cross_worker),
        "decisions": len(graph.decisions),
        "edges": len(graph.edges()),
        # Budget clock when the agents stopped (the harness's selection and `final` scoring come after).
        "budget_s": sched.budget_s,
        "spent_s": round(graph.stopped.payload.spent_s if graph.stopped is not None else 0.0, 3),
        "wall_s": round(graph.spent_seconds(), 3),
        "slots": sched.slots,
        "eval_samples": {k: len(v) for k, v in expos.contract.evaluator.sample_ids.items()},
        # What holds against an agent with a shell in this deployment (docs/expos.md, threat model).
        "trust_boundary": boundary_statement() + model_output_boundary(expos.task),
        "pruned_checkpoints": pruned,
        **metrics,
    }
    tmp = Path(expos.scratch()) / "orchestra_summary.json"
    tmp.write_text(json.dumps(summary, indent=1, sort_keys=True))
    digest = expos.run.store.put_file(tmp, move=True)
    expos.drop_scratch(tmp.parent)
    expos.record(
        ORCHESTRA,
        OrchestraFinish(summary=digest, final_score=summary["final_score"]),
        [{"digest": digest, "role": "output", "name": "orchestra_summary"}],
    )
    summary["summary_json"] = str(expos.run.store.path(digest))
    summary["run_dir"] = str(expos.run.path)
    # Where the returned model is (read-only, in the run's store): outside the stored summary,
    # whose bytes must not depend on the machine the run was on.
    summary["selected_model"] = (
        str(expos.run.store.path(selection["checkpoint"])) if selection["selected"] is not None else None
    )
    return summary


def _last_failure(reader: RunReader) -> str | None:
    """The run's last failure that can explain a run with nothing to return: a Worker's call that
    was invalid or failed (`the last failed call: tool: reason`) or an agent's failed model
    request (`the main agent's last error: ...`), whichever came later; None if neither."""
    failed = reader.events("tool.invalid", "tool.failed", role="worker") + reader.events("agent.error")
    if not failed:
        return None
    event = max(failed, key=lambda e: e.seq)
    last = typed(event).payload
    if isinstance(last, AgentError):
        return f"the {event.actor.role} agent's last error: {last.error}"
    if isinstance(last, ToolInvalid):
        return f"the last failed call: {last.tool}: {last.reason}"
    assert isinstance(last, ToolFailed)
    return f"the last failed call: {last.tool}: {last.error}"


def _why_none(selection: dict[str, Any], st: Any, graph: Any, failure: str | None = None) -> str:
    """Why the harness selected no checkpoint, from the records (for a person or a script)."""
    stop = graph.stopped.payload.reason if graph.stopped is not None else "the run stopped"
    statuses = _count(x.status for x in st.experiments.values())
    # The last failure is the likeliest reason nothing started (an LLM endpoint that answers with
    # errors, a model that samples nothing that passes, a mistyped family).
    cause = f"; {failure}" if failure else ""
    if not graph.workers:
        return f"no Worker was started ({stop}{cause})"
    if not st.experiments:
        return f"{len(graph.workers)} Workers started no experiment ({stop}{cause})"
    if not statuses.get("completed"):
        return f"none of {len(st.experiments)} experiments completed ({statuses}; {stop})"
    rows = selection.get("submissions") or []
    scored = [x for x in st.experiments.values() if any(r.split == "dev" for r in x.records())]
    if not rows and not scored:
        return f"{statuses['completed']} experiments trained but none was scored on dev before the end ({stop})"
    if not rows:
        return f"{statuses['completed']} experiments completed but no Worker submitted a candidate ({stop})"
    flagged = len(selection.get("flagged") or [])
    return f"none of {len(rows)} submissions was accepted ({flagged} flagged by the integrity audit; {stop})"


def _prune(expos: ExpOS, policy: str) -> int:
    """Apply the keep policy once (a resumed close finds the earlier record); checkpoints pruned."""

    done = expos.own_events("artifact.prune")
    if done:
        return sum(len(typed(e, ArtifactPrune).payload.pruned) for e in done)
    payload = prune_checkpoints(expos, HARNESS, policy)
    return 0 if payload is None else len(payload.pruned)


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return dict(sorted(out.items()))


def _reference_score(task: str) -> float | None:
    """The reference recipe's `final` score as measured by the landscape study (on the whole
    split, whereas a run scores the first `eval_limit` items), once it recorded one."""

    t = load().tasks.get(task)
    ref = t.reference if t is not None else None
    return ref.score_final if ref is not None else None
