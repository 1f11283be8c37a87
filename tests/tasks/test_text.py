"""Text helpers shared by every checker (`_text.py`)."""

from __future__ import annotations

import random

from rsi_master.tasks._text import MAX_OUTPUT_CHARS, cut_at_stop, derive_seed, final_line, is_plain_ascii, normalise

STOP = ("\n\n",)


def test_derive_seed_is_a_fixed_function_of_its_parts():
    # Pinned: the sealed sets depend on it, on every machine and Python version.
    assert derive_seed("eval", "arithmetic", "dev", 20260401) == 0xF7EDF5E8618F3DA4
    assert derive_seed("a", "b") != derive_seed("ab")
    assert derive_seed("a", 1) == derive_seed("a", "1")
    assert 0 <= derive_seed("x") < 2**64


def test_random_stream_is_pinned():
    # The sealed sets are drawn with random.Random(int) through randint, choice, sample,
    # shuffle and random; pin their outputs so a Python whose stream differs fails here.
    rng = random.Random(derive_seed("pin"))
    assert [rng.randint(0, 99), rng.choice("abcdef"), rng.sample(range(10), 3), rng.random()] == [
        79,
        "b",
        [5, 9, 7],
        0.43167881615093184,
    ]
    order = list(range(6))
    rng.shuffle(order)
    assert order == [5, 1, 3, 4, 2, 0]


def test_cut_at_stop_takes_the_earliest_stop():
    assert cut_at_stop("a\nb\n\nc\n\nd", STOP) == "a\nb"
    assert cut_at_stop("abc;def\n\n", ("\n\n", ";")) == "abc"
    assert cut_at_stop("no stop", STOP) == "no stop"
    assert cut_at_stop("", STOP) == ""
    assert cut_at_stop("x", ("",)) == "x"  # an empty stop string is ignored, not a cut at 0
    assert len(cut_at_stop("y" * (10 * MAX_OUTPUT_CHARS), STOP)) == MAX_OUTPUT_CHARS


def test_final_line_is_the_last_non_empty_line_before_the_stop():
    assert final_line(" 1+1=2\n#### 2  \n\nQuestion: next", STOP) == "#### 2"
    assert final_line("\n  \n", STOP) == ""
    assert final_line("a\r\nb\r", STOP) == "b"
    assert final_line("\n\nafter", STOP) == ""


def test_normalise_and_alphabet():
    assert normalise("  Ann   HAS\n3 pens. ") == "ann has 3 pens."
    assert is_plain_ascii("Question: 1+1?\nAnswer: #### 2")
    assert not is_plain_ascii("tab\there")
    assert not is_plain_ascii("caf\u00e9")
