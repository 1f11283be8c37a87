"""Errors raised by runtime operations."""

from __future__ import annotations

from rsi_master.errors import RsiMasterError


class InvalidParameterError(RsiMasterError, ValueError):
    """A runtime operation got an unknown name or an out-of-range value; nothing ran."""


class ModelInputError(InvalidParameterError):
    """`--model` names nothing usable: a missing directory, a directory without weights,
    config or tokenizer, damaged weights, an architecture transformers cannot build, a
    repository id that is not in the local Hugging Face cache, or a model without the chat
    template its task needs. Raised before anything is written."""


class CheckpointLoadError(RsiMasterError, ValueError):
    """A checkpoint directory is missing or does not load as a causal LM."""


class SwappedBaseError(CheckpointLoadError):
    """A LoRA adapter's base measures another digest than the one the adapter is bound to."""


class EvaluationError(RsiMasterError):
    """The sealed evaluator refused to run, failed, or timed out."""


class EvaluatorDigestError(EvaluationError):
    """The sealed evaluator is not the one pinned: its copy, or what it reports, has another digest."""


class TrainingError(RsiMasterError):
    """A training run failed after validation passed."""


class InputChangedError(RsiMasterError):
    """A checkpoint the runtime was using changed on disk while it used it.

    The runtime works on private copies hashed as they are written; this is raised when a
    copy no longer has the digest it had, so what was trained or scored is unknown.
    """


class SealSecretError(RsiMasterError):
    """A run's seal secret is missing, unreadable, or not the one its contract committed to."""
