"""Thresholds of the contamination checker, recorded with every report."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ContaminationConfig"]


class ContaminationConfig(BaseModel):
    """Everything that changes what the checker reports; part of the index digest."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(1, description="Schema version of this config.")
    normalisation: Literal[3] = Field(
        3,
        description=(
            "What the normaliser erases, by version (part of the index digest). 1: case, whitespace, punctuation, "
            "quotes, number formatting. 2: also look-alike characters (UTS #39 confusables), default-ignorable "
            "characters and combining marks, digits of every script, English numbers in words; matches run "
            "across row boundaries. 3: also a character reading on both sides (the full TR39 skeleton, ASCII "
            "included, without white space, rows joined), matched by character n-grams."
        ),
    )
    ngram_fail: int = Field(
        13,
        ge=2,
        description=(
            "A shared run fails when its core (from the first to the last non-template shingle of the "
            "protected text inside the run) has at least this many normalised words."
        ),
    )
    ngram_flag: int = Field(
        8, ge=2, description="A run whose core has at least this many words is flagged; also the seed n-gram length."
    )
    near_dup_threshold: float = Field(
        0.9,
        gt=0.0,
        le=1.0,
        description=(
            "MinHash Jaccard estimate (over non-template shingles) at or above which a window is a "
            "near-duplicate. 0.8 fails rows that share two facts and the question of a knowledge item."
        ),
    )
    near_dup_verdict: Literal["fail", "flag"] = Field("fail", description="Verdict of a near-duplicate match.")
    shingle_words: tuple[int, ...] = Field(
        (3, 4),
        min_length=1,
        description="Shingle sizes in words; a text's shingle set holds all sizes (never across a clause).",
    )
    num_perm: int = Field(128, ge=16, le=1024, description="MinHash permutations.")
    minhash_seed: int = Field(1, description="Seed of the MinHash permutations.")
    boilerplate_min_items: int = Field(
        5,
        ge=2,
        description=(
            "An n-gram or shingle found in at least this many distinct protected items is template text: "
            "it may extend a match but never starts one, and MinHash ignores it."
        ),
    )
    near_dup_min_shingles: int = Field(
        3,
        ge=1,
        description="Texts with fewer non-template shingles than this are left to the other two methods.",
    )
    near_dup_min_clauses: int = Field(
        2,
        ge=1,
        description=(
            "A near-duplicate window sharing rare shingles from fewer clauses than this is only flagged: "
            "one shared sentence (`There are 92 eggs in a bag.`) is often a coincidence in templated data."
        ),
    )
    near_dup_one_clause_min_shingles: int = Field(
        5,
        ge=1,
        description="Rare shingles a text needs before a window of fewer than near_dup_min_clauses clauses counts.",
    )
    char_gram: int = Field(
        10, ge=4, le=32, description="Characters of the n-grams of the character reading (see _characters)."
    )
    char_cover: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description=(
            "Share of a protected text's characters its pieces must cover (with every distinctive one) for the "
            "character reading to fail it; below 1, a row that differs from an item only in a template word fails."
        ),
    )
    char_piece: int = Field(
        12, ge=1, description="Characters a piece needs to count with other pieces in nearby rows (char_window)."
    )
    char_window: int = Field(
        32, ge=2, description="Rows of a window of pieces; pieces within half of it always share one."
    )
    char_far: int = Field(
        48, ge=1, description="Characters a piece needs to count with other pieces anywhere in the data."
    )
    min_exact_words: int = Field(
        4, ge=1, description="Protected texts shorter than this (normalised words) are not indexed at all."
    )

    @model_validator(mode="after")
    def _ordered(self) -> ContaminationConfig:
        if not all(1 <= k <= 8 for k in self.shingle_words) or len(set(self.shingle_words)) != len(self.shingle_words):
            raise ValueError(f"shingle_words must be distinct sizes from 1 to 8, got {self.shingle_words}")
        if self.ngram_flag > self.ngram_fail:
            raise ValueError(f"ngram_flag ({self.ngram_flag}) must not exceed ngram_fail ({self.ngram_fail})")
        return self
