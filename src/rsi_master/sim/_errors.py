"""The simulator's user-facing errors (one line each, as every RsiMasterError)."""

from __future__ import annotations

from ..errors import RsiMasterError

__all__ = ["LandscapeFileError", "SimInputError"]


class SimInputError(RsiMasterError, ValueError):
    """Bad generator flags, an unknown preset, or a recipe or split the landscape does not have."""


class LandscapeFileError(RsiMasterError):
    """A landscape file that is missing, unreadable, or does not parse as a simulated landscape."""
