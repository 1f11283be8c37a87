"""Contamination checks: no training row may contain a protected evaluation item.

Three methods always run (exact match after normalisation, word n-gram overlap and
MinHash near-duplicates) against an index built once from the `dev`, `review` and
`final` items of a task. See `docs/contamination.md`.
"""

from ._check import check, row_text
from ._config import ContaminationConfig
from ._index import ContaminationIndex, build_index, index_digest
from ._items import PROTECTED_SPLITS, ProtectedItem, protected_items
from ._normalise import normalise, tokens
from ._report import ContaminationFinding, ContaminationReport, MatchKind, Verdict

__all__ = [
    "PROTECTED_SPLITS",
    "ContaminationConfig",
    "ContaminationFinding",
    "ContaminationIndex",
    "ContaminationReport",
    "MatchKind",
    "ProtectedItem",
    "Verdict",
    "build_index",
    "check",
    "index_digest",
    "normalise",
    "protected_items",
    "row_text",
    "tokens",
]
