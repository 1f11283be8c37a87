"""Errors a user may see. Each carries a one-line message fit for a terminal."""

from __future__ import annotations

__all__ = [
    "ArtifactError",
    "KeyMismatchError",
    "LedgerError",
    "MalformedEventError",
    "NotARunError",
    "RsiMasterError",
    "StopRequested",
]


class StopRequested(Exception):
    """Raised inside a node asked to stop (the orchestra's BudgetEnd): code below the orchestra
    records what it was doing as failed and lets it through, so that the node stops."""


class RsiMasterError(Exception):
    """Base class: the CLI prints these as one line and exits non-zero."""


class NotARunError(RsiMasterError):
    """The path is missing, unreadable, or not an RSI-Master run directory."""


class LedgerError(RsiMasterError):
    """The ledger could not be read or written."""


class MalformedEventError(LedgerError):
    """An event draft failed validation; nothing was written."""


class KeyMismatchError(RsiMasterError):
    """A signing key does not belong to the run it is used with."""


class ArtifactError(RsiMasterError):
    """An artifact could not be stored or read."""
