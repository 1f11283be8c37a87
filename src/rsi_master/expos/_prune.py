"""The keep policy: prune intermediate checkpoints nothing refers to, with a ledger record.

A 4B model's checkpoint is 8 GB and a run trains dozens. Under `referenced`, at the end of
a run, the harness removes every completed experiment's checkpoint that is not protected:
evaluated on `review`, submitted or nominated, selected or scored on `final`, cited by a
decision or a review (by event or by experiment id), or the base a kept adapter is bound
to. The store keeps each pruned directory's manifest, so every digest the ledger names
still resolves to what it named; `verify` and `audit` read the `artifact.prune` record and
say what was pruned instead of reporting it missing.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from ..events import ArtifactPrune, HarnessFinal, HarnessSelect, PrunedCheckpoint, typed
from ._evaluation import adapter_base_of
from ._reader import load_state

if TYPE_CHECKING:
    from ._reader import RunReader

__all__ = ["KEEP_POLICIES", "protected_checkpoints", "prune_checkpoints"]

KEEP_POLICIES = ("all", "referenced")
_EXP_ID = re.compile(r"\bexp-\d+\b")


def _cited(text: Any) -> set[str]:
    return set(_EXP_ID.findall(json.dumps(text, default=str)))


def protected_checkpoints(reader: RunReader) -> dict[str, list[str]]:
    """Experiment id -> why its checkpoint is kept (only experiments with a checkpoint)."""
    st = load_state(reader)
    done = {x.id: x for x in st.experiments.values() if x.status == "completed" and x.checkpoint}
    by_seq: dict[int, str] = {}
    for x in done.values():
        by_seq[x.seq] = x.id
        if x.finish_seq is not None:
            by_seq[x.finish_seq] = x.id
        for rec in x.evals:
            by_seq[rec.seq] = x.id
    why: dict[str, list[str]] = {}

    def keep(xid: str | None, reason: str) -> None:
        if xid in done and reason not in why.setdefault(xid, []):
            why[xid].append(reason)

    for x in done.values():
        if any(e.split == "review" for e in x.records()):
            keep(x.id, "evaluated on review")
    for xid, _owner, _seq in st.submissions:
        keep(xid, "submitted")
    for xid, _seq in st.nominations:
        keep(xid, "nominated")
    digests = {x.checkpoint: x.id for x in done.values()}
    for event in reader.own_events("harness.select"):
        sel = typed(event, HarnessSelect).payload
        keep(sel.selected or digests.get(sel.checkpoint), "selected")
    for event in reader.own_events("harness.final"):
        keep(digests.get(typed(event, HarnessFinal).payload.checkpoint_digest), "scored on final")
    for d in st.decisions:
        for seq in d.evidence:
            keep(by_seq.get(seq), f"cited by decision {d.seq}")
        for xid in _cited([d.rationale, d.detail]):
            keep(xid, f"cited by decision {d.seq}")
    for r in st.reviews:
        for seq in r.payload.evidence:
            keep(by_seq.get(seq), f"cited by review {r.seq}")
        for xid in _cited(r.payload.model_dump(exclude={"evidence"})):
            keep(xid, f"cited by review {r.seq}")
    # An adapter is loaded on its base: a kept adapter keeps the checkpoint it is bound to.

    for xid in list(why):
        base = adapter_base_of(reader.store, str(done[xid].checkpoint))
        if base is not None:
            keep(digests.get(base), f"base of kept adapter {xid}")
    return why


def prune_checkpoints(expos, actor: Any, policy: str) -> ArtifactPrune | None:
    """Apply the keep policy and record what it removed (None: `all`, or nothing to prune)."""
    if policy not in KEEP_POLICIES:
        raise ValueError(f"unknown keep policy {policy!r}; known: {', '.join(KEEP_POLICIES)}")
    if policy == "all":
        return None
    why = protected_checkpoints(expos.reader)
    st = load_state(expos.reader)
    kept_digests = {st.experiments[x].checkpoint for x in why} | {expos.contract.base_model_artifact}
    store = expos.run.store
    doomed = [
        (x.id, x.checkpoint)
        for x in st.experiments.values()
        if x.status == "completed"
        and x.checkpoint
        and x.id not in why
        and x.checkpoint not in kept_digests
        and not store.is_pruned(x.checkpoint)
        and store.has(x.checkpoint)
        and store.kind(x.checkpoint) == "dir"
    ]
    if not doomed:
        return None
    # Every blob the ledger names by itself stays, whichever trees used it too.
    named = {d for (d,) in expos.run.ledger.connection.execute("SELECT DISTINCT digest FROM artifact_refs")}
    freed = store.prune_dirs([d for _, d in doomed], keep=named - {d for _, d in doomed})
    payload = ArtifactPrune(
        policy=policy,
        pruned=[PrunedCheckpoint(experiment_id=x, checkpoint=d) for x, d in doomed],
        kept={x: why[x] for x in sorted(why)},
        bytes_freed=freed,
    )
    expos.record(actor, payload, [{"digest": d, "role": "input", "name": "pruned_checkpoint"} for _, d in doomed])
    return payload
