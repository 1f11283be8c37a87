"""The contamination report: one schema for the API, the ledger event and the audit."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ._config import ContaminationConfig

__all__ = ["ContaminationFinding", "ContaminationReport", "MatchKind", "Verdict"]

MatchKind = Literal["exact", "ngram", "near_duplicate", "characters"]
Verdict = Literal["clean", "flagged", "failed"]


class ContaminationFinding(BaseModel):
    """One training row matching one protected text by one method."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    row: int = Field(
        description="Index of the training row in the checked input (0-based); the first row of a match that spans rows."
    )
    last_row: int | None = Field(
        None,
        description=(
            "Last row of a match that runs on over consecutive rows (exact, ngram, characters); None within one row."
        ),
    )
    split: str = Field(description="Protected split of the matched item (dev, review or final).")
    sample_id: str = Field(description="Sample ID of the matched evaluation item.")
    text_kind: str = Field(description="Which text of the item matched: prompt, question or reference.")
    kind: MatchKind = Field(description="Method that found the match.")
    verdict: Literal["fail", "flag"] = Field(description="fail blocks the data; flag asks a person to look.")
    words: int = Field(
        description=(
            "Normalised words of the evidence: the shared run (exact, ngram) or the row window (near_duplicate); "
            "characters of the piece for the character reading (characters)."
        )
    )
    jaccard: float | None = Field(None, description="MinHash Jaccard estimate (near_duplicate only).")
    evidence: str = Field(description="The matched normalised span, cut to 300 characters.")
    reading: str | None = Field(
        None,
        description="The decoded reading of the row the match was found in (`base64`, `hex`, `url`, `interleaved`, "
        "joined by `+` when nested); None for the row as written. Index-side encodings show in `text_kind`.",
    )


class ContaminationReport(BaseModel):
    """Result of checking a batch of training rows against a contamination index."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(
        2,
        description="Schema version of this report (2: findings may span rows, and rows_failed/rows_flagged count every row a match spans).",
    )
    index_digest: str = Field(description="SHA-256 of the index (protected texts and config) the check used.")
    config: ContaminationConfig = Field(description="Thresholds the check ran with.")
    rows: int = Field(description="Training rows checked.")
    chars: int = Field(description="Characters of training text checked.")
    rows_failed: int = Field(description="Rows within at least one fail finding.")
    rows_flagged: int = Field(description="Rows within flag findings only.")
    findings: list[ContaminationFinding] = Field(description="Every finding, sorted by row, split, sample ID, kind.")
    verdict: Verdict = Field(description="failed if any row failed, else flagged if any row was flagged, else clean.")
