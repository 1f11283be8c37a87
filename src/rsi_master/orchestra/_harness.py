"""The harness's part: select the returned checkpoint, score it once on `final`.

Selection is a fixed rule, not an agent's choice: among accepted submissions (those the
integrity audit does not flag), the highest `review` score wins; ties go to the
checkpoint with more training examples behind it, then to the earliest submission. A
submission no Reviewer scored on `review` is scored there by the harness (recorded like
any evaluation). `final` is never used to select: the selected
checkpoint, and the base model for comparison, are each scored on it exactly once, and
a resumed run reuses those records instead of scoring again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..events import HarnessFinal, HarnessSelect, SelectionRow, dump_payload, typed
from ..expos import Caller, audit, load_state
from ._memory import lineage_examples

if TYPE_CHECKING:
    from ..expos import ExpOS

__all__ = ["HARNESS", "evaluate_final", "final_scores", "select"]

HARNESS = {"role": "harness", "id": "harness"}


def select(expos: ExpOS) -> dict[str, Any]:
    """Record and return the `harness.select` payload (reused if already recorded)."""

    # Evidence is what the signed head vouches for: a record appended without the key (a
    # forged evaluation with a recomputed chain) stops the selection here, not in its result.
    # The projection is advanced first, so that every event it has read is among those vouched for.
    expos.projection().vouch()
    done = expos.own_events("harness.select")
    if done:
        return dump_payload(typed(done[-1], HarnessSelect).payload)
    report = audit(expos)
    # An unguarded run (the bench's no-ExpOS ablation) has no audit at selection time:
    # whatever its agents' evaluations say is what selection sees.
    guarded = expos.guards.guarded
    flagged = set(report.flagged) if guarded else set()
    st = load_state(expos.reader)
    rows: list[dict[str, Any]] = []
    for xid, owner, seq in st.submissions:
        x = st.experiments.get(xid)
        if x is None or x.status != "completed" or not x.checkpoint or xid in flagged:
            rows.append({"experiment_id": xid, "owner": owner, "accepted": False, "review_score": None})
            continue
        rec = next((e for e in x.records() if e.split == "review"), None)
        if rec is None:
            made = expos.evaluate(Caller("harness", "harness"), xid, x.checkpoint, "review")
            score, rseq = made.payload.score, made.seq
        else:
            score, rseq = rec.score, rec.seq
        rows.append(
            {
                "experiment_id": xid,
                "owner": owner,
                "accepted": True,
                "review_score": score,
                "record_seq": rseq,
                "submitted_seq": seq,
                "checkpoint": x.checkpoint,
            }
        )
    # Duplicates (a candidate submitted twice) count once, at its first submission.
    first: dict[str, dict[str, Any]] = {}
    for r in rows:
        first.setdefault(r["experiment_id"], r)
    uniq = list(first.values())
    accepted = [r for r in uniq if r["accepted"]]
    # Ties (all zero, after a short campaign on this landscape) go to the checkpoint with more
    # training examples behind it, then to the earliest submission.
    trained = {xid: (x.parent, x.spec) for xid, x in st.experiments.items()}
    for r in accepted:
        r["lineage_examples"] = lineage_examples(trained, r["experiment_id"])
    winner = (
        min(accepted, key=lambda r: (-r["review_score"], -r["lineage_examples"], r["submitted_seq"]))
        if accepted
        else None
    )
    ties = "ties: more training behind the checkpoint, then earliest submission"
    expos.projection().vouch()  # and so is every event read since (the evaluations just made included)
    payload = HarnessSelect(
        rule=f"max review score among audit-unflagged submissions; {ties}"
        if guarded
        else f"max review score among submissions (unguarded: no audit at selection); {ties}",
        selected=winner["experiment_id"] if winner else None,
        checkpoint=winner["checkpoint"] if winner else expos.contract.base_model_artifact,
        review_score=winner["review_score"] if winner else None,
        hacking_rate=report.hacking_rate,
        blocked_attempts=report.blocked_attempts,
        flagged=sorted(flagged),
        submissions=[SelectionRow.model_validate(r) for r in uniq],
    )
    expos.record(HARNESS, payload, [{"digest": payload.checkpoint, "role": "input", "name": "selected_checkpoint"}])
    return dump_payload(payload)


def evaluate_final(expos: ExpOS, checkpoint: str, *, store: bool) -> Any:
    """Score a stored checkpoint on the whole `final` split with the run's sealed evaluator
    (`store`: keep the per-sample record in the run's store): the run's experiment backend's
    evaluation (the sealed evaluator, with an adapter's base, or the simulated world)."""
    return expos.backend.evaluate(expos, checkpoint, "final", store=store)


def _final(expos: ExpOS, subject: str, checkpoint: str) -> dict[str, Any]:

    from ..runtime import EvaluationError

    expos.run.ledger.vouch()  # a forged `harness.final` is never reused as the run's score
    for e in expos.own_events("harness.final"):
        done = typed(e, HarnessFinal).payload
        if done.subject == subject and done.checkpoint_digest == checkpoint:
            return dump_payload(done)
    c = expos.contract
    res = evaluate_final(expos, checkpoint, store=True)
    if res.checkpoint_digest != checkpoint:  # measured on the bytes scored; never record a claimed digest
        raise EvaluationError(f"checkpoint {checkpoint} measured {res.checkpoint_digest} when scored on final")
    assert res.record_digest is not None  # given a store, the evaluation stores its record
    payload = HarnessFinal(
        subject=subject,
        split="final",
        score=res.score,
        n_samples=len(res.sample_ids),
        checkpoint_digest=res.checkpoint_digest,
        evaluator_digest=res.evaluator_digest,
        sample_ids_match=list(res.sample_ids) == list(c.evaluator.sample_ids["final"]),
        record_digest=res.record_digest,
    )
    expos.record(
        HARNESS,
        payload,
        [
            {"digest": checkpoint, "role": "input", "name": "checkpoint"},
            {"digest": res.record_digest, "role": "output", "name": "eval_record"},
        ],
    )
    return dump_payload(payload)


def final_scores(expos: ExpOS, selection: dict[str, Any]) -> dict[str, Any]:
    """Score the selected checkpoint and the base once each on `final`."""
    base = _final(expos, "base", expos.contract.base_model_artifact)
    if selection["selected"] is None:
        chosen = {**base, "subject": "selected (none accepted: the base model)"}
    else:
        chosen = _final(expos, "selected", selection["checkpoint"])
    return {"final_score": chosen["score"], "base_score": base["score"], "final": chosen, "base": base}
