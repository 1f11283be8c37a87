"""A batch of rows as the matchers read it (`_check` builds it, `_matching` reads it)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._normalise import Scan

__all__ = ["Batch"]


@dataclass
class Batch:
    """One batch of rows as word ids (clause and row markers removed) with their row and clause."""

    first_row: int
    tokens: Scan  # normalised tokens, clause markers included
    token_pos: np.ndarray  # word position -> token index
    ids: np.ndarray
    values: np.ndarray
    row: np.ndarray  # word position -> row number within the batch (non-decreasing)
    clause: np.ndarray  # a row marker starts a clause too: no clause spans two rows
    bad: np.ndarray  # unknown word: no match can contain it
    row_start: np.ndarray  # row -> first word position
    row_end: np.ndarray
