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


@pytest.mark.parametrize(
    ("disguised", "plain"),
    [
        ("Вох hоlds 31 kеуs", "Box holds 31 keys"),  # Cyrillic look-alikes
        ("ΙDA Νora ΤΕΑ", "IDA Nora TEA"),  # Greek capitals
        ("\uff21 \uff42\uff4f\uff58 \uff18\uff19", "A box 89"),  # fullwidth
        ("sh\u200bel\u00adls\u200d a\u2060n\ufeffd k\u034fe\ufe0fy\U000e0041s", "shells and keys"),  # invisible
        ("\u0663\u0661 \u0969\u0967 \u06f3\u06f1 \u0e53\u0e51", "31 31 31 31"),  # other digits
        ("\u0663\u066b\u0665\u0660", "3.50"),  # the Arabic decimal separator
        ("z\u0334a\u0308l\u0301g\u0336o", "zalgo"),  # combining marks
        ("[1,6] \u2192 [4]", "[1,6] -> [4]"),
        ("a\u3164box", "a box"),  # a Hangul filler is drawn as a blank
    ],
)
def test_characters_that_read_the_same_normalise_alike(disguised: str, plain: str) -> None:
    assert normalise(disguised) == normalise(plain)


@pytest.mark.parametrize(
    ("words", "digits"),
    [
        ("forty-two shells", "42 shells"),
        ("Forty Two shells", "42 shells"),
        ("one hundred and seven", "107"),
        ("twelve thousand", "12000"),
        ("one thousand, two hundred and thirty-four", "1234"),
        ("two three", "2 3"),
        ("nineteen eighty-four", "19 84"),
        ("[four,seven,zero]", "[4,7,0]"),
        ("five - three", "5 - 3"),
        ("someone gave one", "someone gave 1"),
    ],
)
def test_english_numbers_in_words_read_as_digits(words: str, digits: str) -> None:
    assert normalise(words) == normalise(digits)


def test_ascii_is_not_folded_as_look_alikes() -> None:
    # TR39 folds these inside ASCII too; here digits stay digits (docs: not caught).
    assert normalise("10 rn I") == "10 rn i" != normalise("lo m l")


def test_fold_is_the_same_run_by_run_and_whole() -> None:
    import random
    import unicodedata

    from rsi_master.expos.contamination._unicode import _TABLE, fold

    rng = random.Random(7)
    alphabet = (
        "ab Zz09.,-\u0430\u0421\u0391\u03c3\u03a3\u200b\u00ad\u0301\u0308\uff21\u0663\u2192\u3164\ud7a3\u00e9\u0130"
    )
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        whole = unicodedata.normalize("NFKD", text).translate(_TABLE)
        assert fold(text) == whole, text  # dense: folded whole
        assert fold("x" * 1000 + text) == "x" * 1000 + whole, text  # sparse: run by run
