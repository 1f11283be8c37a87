"""Normalisation: the formatting an agent can change must not change the tokens."""

from __future__ import annotations

import pytest

from rsi_master.expos.contamination import normalise, tokens


@pytest.mark.parametrize(
    "variants",
    [
        ["1000 coins", "1,000 coins", "1000.0 coins", "01000 coins", "1000.00 Coins"],
        ["A box holds 31 shells.", "a  box\tholds\n31 SHELLS", "A box holds 031.0 shells!"],
        ["Lea's pen", "Lea’s pen", "LEAS pen"],
        ['say "hi"', "say \u201chi\u201d", "say 'hi'"],
        ["12,345,678", "12345678", "12345678.000"],
        ["2.50", "2.5", "02.500"],
    ],
)
def test_formatting_variants_normalise_alike(variants: list[str]) -> None:
    assert len({normalise(v) for v in variants}) == 1, [normalise(v) for v in variants]


def test_meaningful_symbols_are_kept() -> None:
    assert normalise("45+23") != normalise("45-23")
    assert normalise("[1,2] -> [3]") == "1 2 -> 3"
    assert normalise("map(+3) | filter(>3)") == "map + 3 | filter > 3"
    assert normalise("well-known") == "well known"  # a hyphen, not a minus


def test_lists_are_not_thousands() -> None:
    # `[1,005]` is a program example list; with leading zeros added by a disguise it must
    # still read as the list it is, not as the number 1005.
    assert normalise("[1,005]") == normalise("[1,5]") == "1 5"
    assert normalise("[5.0,08,005]") == normalise("[5,8,5]")
    assert normalise("0.05") == "0 05"  # a fraction keeps its leading zero


def test_clause_markers() -> None:
    toks = tokens("Facts: A likes b. C is in d.\nQuestion: where?")
    assert toks.count("\x01") == 5
    assert normalise("Facts: A likes b. C is in d.") == "facts a likes b c is in d"
    # A bare line break is whitespace, not a clause boundary.
    assert tokens("a b\nc d") == ["a", "b", "c", "d"]


def test_non_ascii_is_folded() -> None:
    assert normalise("\uff26\uff55\uff4c\uff4c width") == "full width"
    assert normalise("École") == "ecole"  # combining marks are dropped (see _unicode)
    assert normalise("") == ""
