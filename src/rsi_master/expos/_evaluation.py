"""Evaluation through ExpOS: the sealed evaluator, pinned by the contract, recorded in full."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..artifacts import RunStore, dir_digest, read_measured
from ..errors import ArtifactError
from ..events import EvalRecord, TypedEvent, typed
from ._errors import ToolRefused
from ._ports import EvalRun
from ._reader import load_state
from ._taxonomy import Subcategory

__all__ = [
    "adapter_base_of",
    "evaluate_experiment",
    "evaluate_unchecked",
    "measured_digest",
    "public_reason",
    "record_evaluation",
    "sealed_evaluation",
    "stored_seal",
]


def _sha_file(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def measured_digest(store: RunStore, digest: str) -> str | None:
    """What a stored artifact's bytes hash to now (None: unreadable, a link, or missing)."""

    try:
        path = store.path(digest)
        if path.is_symlink():
            return None
        return dir_digest(path) if path.is_dir() else read_measured(path)[1]
    except (ArtifactError, OSError):
        return None


def adapter_base_of(store: RunStore, checkpoint: str) -> str | None:
    """The base digest a stored adapter checkpoint is bound to (None: a full model); refused
    unless that base is in the run's store with the bytes it is named by."""
    from ..runtime import CheckpointLoadError, adapter_base_digest, is_adapter

    path = store.path(checkpoint)
    if not is_adapter(path):
        return None
    try:
        base = adapter_base_digest(path)
    except CheckpointLoadError as exc:
        raise ToolRefused(f"checkpoint {checkpoint[:12]}: {exc}", Subcategory.WEIGHT_PROVENANCE) from None
    if measured_digest(store, base) != base:
        raise ToolRefused(
            f"adapter {checkpoint[:12]} is bound to base {base[:12]}, which is missing or was changed on disk",
            Subcategory.WEIGHT_PROVENANCE,
        )
    return base


def stored_seal(store: RunStore, artifact: str) -> Path:
    """The run's stored seal (the contract's `evaluator_artifact`), to be copied privately and
    checked before each evaluation; EvaluationError when the store lacks it."""
    from ..runtime import EvaluationError

    try:
        return Path(store.path(artifact))
    except ArtifactError:
        raise EvaluationError(
            f"the sealed evaluator (digest {artifact[:12]}) is missing from the run's store; refusing to evaluate"
        ) from None


def public_reason(reason: str) -> str:
    """A checker's reason without anything that could reveal the reference answer."""
    head = reason.split(":", 1)[0]
    return head.split(" expected", 1)[0].strip()[:80]


def evaluate_experiment(
    expos: EvalRun, caller, experiment_id: str, checkpoint: str, split: str
) -> TypedEvent[EvalRecord]:
    """Score a stored checkpoint on a split's preregistered samples and record it.

    Refuses (and records) a checkpoint whose tokenizer or generation config differ from
    the base (stopping/EOS), one whose bytes are not the ones it is named by (weight
    provenance), and an evaluator whose sealed copy does not match the contract
    (harness). The evaluator scores a private copy hashed as it was made; the record
    carries that measured digest, and it must equal the claimed one. Returns the typed
    eval.record event. The harness uses it too (role
    `harness`) to score selected checkpoints on `final`.
    """
    from ..runtime import EvaluatorDigestError, InputChangedError, SwappedBaseError

    c = expos.contract
    ckpt_dir = expos.run.store.path(checkpoint)
    # Early refusals on the stored files, so nothing runs for a tampered checkpoint; the
    # binding check is on the digests measured from the bytes actually scored (below).
    if measured_digest(expos.run.store, checkpoint) != checkpoint:
        raise ToolRefused(
            f"checkpoint {checkpoint[:12]} was changed on disk after training", Subcategory.WEIGHT_PROVENANCE
        )
    if (
        _sha_file(ckpt_dir / "tokenizer.json") != c.base_tokenizer_sha256
        or _sha_file(ckpt_dir / "generation_config.json") != c.base_generation_config_sha256
    ):
        raise ToolRefused(
            f"checkpoint {checkpoint[:12]} has a tokenizer or generation config that differs from the base model's",
            Subcategory.STOPPING,
        )
    done = scored(expos, checkpoint, split)
    if done is not None:  # evaluation is deterministic: a checkpoint is scored once per split
        adapter_base_of(expos.run.store, checkpoint)  # the bytes the record scored are still the ones it names
        return done
    try:
        res = sealed_evaluation(expos, checkpoint, split)
    except (SwappedBaseError, InputChangedError) as exc:
        raise ToolRefused(f"checkpoint {checkpoint[:12]}: {exc}", Subcategory.WEIGHT_PROVENANCE) from None
    except EvaluatorDigestError as exc:
        raise ToolRefused(f"the sealed evaluator does not match the contract: {exc}", Subcategory.HARNESS) from None
    if res.checkpoint_digest != checkpoint:
        raise ToolRefused(
            f"checkpoint {checkpoint[:12]}: the bytes scored measure {res.checkpoint_digest}, not "
            f"the claimed {checkpoint}; not recorded",
            Subcategory.WEIGHT_PROVENANCE,
        )
    if (
        res.tokenizer_digest != c.base_tokenizer_sha256
        or res.generation_config_digest != c.base_generation_config_sha256
    ):
        raise ToolRefused(
            f"checkpoint {checkpoint[:12]}: the tokenizer or generation config scored differs from "
            "the base model's; not recorded",
            Subcategory.STOPPING,
        )
    # Scored meanwhile by another slot (two experiments that ended with the same bytes): that one
    # record stands; a second would be a repeated scoring of one checkpoint.
    done = scored(expos, checkpoint, split)
    return done if done is not None else record_evaluation(expos, caller, experiment_id, checkpoint, res)


def scored(expos: EvalRun, checkpoint: str, split: str) -> TypedEvent[EvalRecord] | None:
    """The `eval.record` event that already scored these checkpoint bytes on this split, if any."""

    x = load_state(expos.reader).by_checkpoint(checkpoint)
    rec = next((e for e in (x.records() if x else []) if e.split == split and e.checkpoint_digest == checkpoint), None)
    return typed(expos.run.ledger.get(rec.seq), EvalRecord) if rec is not None else None


def sealed_evaluation(expos: EvalRun, checkpoint: str, split: str) -> Any:
    """The sealed evaluator's result for a stored checkpoint on a split's preregistered samples
    (its record in the run's store), nothing checked and nothing recorded in the ledger: the
    run's experiment backend scores it (the real sealed evaluator, with an adapter's base, or the
    simulated world)."""
    return expos.backend.evaluate(expos, checkpoint, split)


def evaluate_unchecked(
    expos: EvalRun, caller, experiment_id: str, checkpoint: str, split: str
) -> TypedEvent[EvalRecord]:
    """`evaluate_experiment` with none of its refusals (an unguarded session): the checkpoint
    is scored whatever its bytes, tokenizer or generation config, and recorded as it was."""
    return record_evaluation(expos, caller, experiment_id, checkpoint, sealed_evaluation(expos, checkpoint, split))


def record_evaluation(expos: EvalRun, caller, experiment_id: str, checkpoint: str, res: Any) -> TypedEvent[EvalRecord]:
    """Record an evaluation result (stored at `res.record_digest`) as `eval.record`; the typed event."""
    wanted = expos.contract.evaluator.sample_ids[res.split]
    payload = EvalRecord(
        experiment_id=experiment_id,
        split=res.split,
        score=res.score,
        n_samples=len(res.sample_ids),
        checkpoint_digest=res.checkpoint_digest,
        evaluator_digest=res.evaluator_digest,
        template_digest=res.template_digest,
        decoding=res.decoding,
        stop=res.stop,
        sample_ids_sha256=hashlib.sha256(json.dumps(res.sample_ids).encode()).hexdigest(),
        sample_ids_match=list(res.sample_ids) == list(wanted),
        tokenizer_digest=res.tokenizer_digest,
        generation_config_digest=res.generation_config_digest,
        record_digest=res.record_digest,
        **({"base_digest": res.base_digest} if res.base_digest is not None else {}),
    )
    event = expos.record(
        caller,
        payload,
        [
            {"digest": checkpoint, "role": "input", "name": "checkpoint"},
            *([{"digest": res.base_digest, "role": "input", "name": "adapter_base"}] if res.base_digest else []),
            {"digest": res.record_digest, "role": "output", "name": "eval_record"},
        ],
    )
    return typed(event, EvalRecord)
