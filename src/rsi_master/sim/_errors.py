"""The simulator's user-facing errors (one line each, as every RsiMasterError)."""

from __future__ import annotations

from ..errors import RsiMasterError

__all__ = ["SimInputError", "WorldFileError"]


class SimInputError(RsiMasterError, ValueError):
    """Bad generator flags, an unknown preset, or a recipe or split the world does not have."""


class WorldFileError(RsiMasterError):
    """A world file that is missing, unreadable, or does not parse as a simulated world."""
