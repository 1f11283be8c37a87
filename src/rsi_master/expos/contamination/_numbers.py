"""Numbers written in words become digits: `forty-two` reads as `42`.

The protected items write every number in digits; an agent can spell them out
(`A box holds thirty-one keys`) and every n-gram holding a number would change.
English cardinals are read (`zero` to `nineteen`, the tens, `hundred`, `thousand`,
`million`, `billion`, `trillion`, joined by spaces, hyphens or `and`, and by a comma
after a scale word: `one thousand, two hundred and thirty-four`); other languages,
ordinals, fractions and digits followed by a scale word (`12 thousand`) are not.

Finding the words is vectorised: a token of a scanned batch is a number word when
its key (its own bytes, see `_keys.token_keys`) is in a small hash table, one
lookup for all tokens of a batch. Clean training data has few such tokens; only
those are looked at in Python. Each run of number words (consecutive tokens with
nothing but white space or a hyphen between them, `and` allowed between two of
them, and row boundaries: an item cut into rows may be cut inside a number) is read by `text2num` (`alpha2digit`, language `en`), the maintained parser
of spelled-out numbers, and the run's bytes are replaced by its digits.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ...errors import RsiMasterError
from ._keys import token_keys  # a number word's key is what a scan gives its token
from ._table import WordTable

__all__ = ["NUMBER_WORDS", "spelled_numbers"]

NUMBER_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
    "hundred",
    "thousand",
    "million",
    "billion",
    "trillion",
]
_GAP = b" \t\r\n\x0b\x0c-"  # what may stand between two words of one number
_FIRST_SCALE = NUMBER_WORDS.index("hundred") + 1  # table ids above this are thousand, million...
_COMMA_KEY = ord(",")  # the key of a `,` clause marker token (see _normalise.scan)
_ROW_KEY = 0  # the key of a row separator token
_MINUS_KEY = ord("-")  # a hyphen at the end or start of a row is a token of its own
_CONNECTORS = frozenset({_COMMA_KEY, _ROW_KEY, _MINUS_KEY})
_MAX_BRIDGE = 4  # tokens from one number word to the next within a number, at most
_BITMAP_BITS = 12  # 4,096 bits for 32 words: about 1 % of other tokens pass
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_NOT_GAP = np.ones(256, dtype=bool)
_NOT_GAP[list(_GAP)] = False


@lru_cache(maxsize=1)
def _words() -> tuple[WordTable, np.ndarray, int]:
    """Table of the number words' token keys (ids from 1), a bitmap of their
    `_slot`s (most tokens of a batch are ruled out by one look at it) and the key of
    `and`."""
    words = [w.encode("ascii") for w in (*NUMBER_WORDS, "and")]
    ends = np.cumsum([len(w) + 1 for w in words]) - 1
    keys = token_keys(np.frombuffer(b" ".join(words), dtype=np.uint8), ends - [len(w) for w in words], ends)
    bitmap = np.zeros(1 << _BITMAP_BITS, dtype=bool)
    bitmap[_slot(keys[:-1])] = True
    return WordTable.build(keys[:-1], np.arange(1, len(keys))), bitmap, int(keys[-1])


def _slot(keys: np.ndarray) -> np.ndarray:
    return ((keys * _MULTIPLIER) >> np.uint64(64 - _BITMAP_BITS)).view(np.intp)


@lru_cache(maxsize=1)
def _alone() -> dict[int, bytes]:
    """The digits of each number word on its own, by table id."""
    return {k: read_number_words(w).encode("ascii") for k, w in enumerate(NUMBER_WORDS, start=1)}


@lru_cache(maxsize=1)
def _parser() -> Any:
    try:
        from text_to_num import alpha2digit
    except ImportError as exc:
        raise RsiMasterError(
            "the contamination check reads spelled-out numbers with the `text2num` package; "
            "install the project's dependencies (pip install -e .)"
        ) from exc
    return alpha2digit


@lru_cache(maxsize=1 << 14)
def read_number_words(words: str) -> str:
    """Digits for a run of English number words (`forty two` -> `42`, `two three` ->
    `2 3`); numbers are written without leading zeros, as the normaliser writes them."""
    out = _parser()(words, "en", threshold=0)
    return " ".join(str(int(w)) if w.isdigit() else w for w in out.split())


def spelled_numbers(c: np.ndarray, starts: np.ndarray, ends: np.ndarray, keys: np.ndarray) -> np.ndarray | None:
    """Normalised bytes `c` with every run of number words replaced by its digits, or
    None when `c` holds no number word (the token spans and keys then stand)."""
    table, bitmap, and_key = _words()
    maybe = np.flatnonzero(bitmap.take(_slot(keys)))
    if not len(maybe):
        return None
    ids = np.zeros(len(keys), dtype=np.int64)
    ids[maybe] = table.lookup(keys[maybe])
    hit = np.flatnonzero(ids)
    if not len(hit):
        return None
    data = c.tobytes()

    def gap(i: int, j: int) -> bytes:
        return data[int(ends[i]) : int(starts[j])].strip(_GAP)

    def scale(i: int) -> bool:
        return int(ids[i]) > _FIRST_SCALE

    def bridges(last: int, h: int) -> bool:
        """Whether the tokens between number words `last` and `h` join them into one
        number: nothing, `and`, a comma after a scale word, or row boundaries (rows
        are one stream: `thirty` at the end of a row and `eight` at the start of the
        next are `38`), with only white space between the tokens."""
        between = [int(keys[k]) for k in range(last + 1, h)]
        if any(gap(k, k + 1) for k in range(last, h)):
            return not between and gap(last, h) == b"," and scale(last)
        if _ROW_KEY in between:  # a hyphen may end or start a row (`thirty-` | `eight`)
            between = [k for k in between if k not in (_ROW_KEY, _MINUS_KEY)]
        return not between or between == [and_key] or (between == [_COMMA_KEY] and scale(last))

    # Which neighbouring number words belong to one number: next to each other with
    # white space or a hyphen between (vectorised, the common case), else asked of
    # `bridges` when at most _MAX_BRIDGE tokens apart.
    left, right = hit[:-1], hit[1:]
    outside = np.concatenate(([0], np.cumsum(_NOT_GAP[c], dtype=np.int64)))
    join = (right == left + 1) & (outside[starts[right]] == outside[ends[left]])
    for k in np.flatnonzero(~join & (right - left <= _MAX_BRIDGE)).tolist():
        join[k] = bridges(int(left[k]), int(right[k]))
    first = np.flatnonzero(np.concatenate(([True], ~join)))
    last = np.concatenate((first[1:] - 1, [len(hit) - 1]))
    pieces: list[bytes] = []
    done = 0
    for a, b in zip(hit[first].tolist(), hit[last].tolist()):
        lo, hi = int(starts[a]), int(ends[b])
        if a == b:
            digits = _alone()[int(ids[a])]
        else:
            run = range(a, b + 1)
            words = " ".join(
                data[int(starts[k]) : int(ends[k])].decode("utf-8") for k in run if int(keys[k]) not in _CONNECTORS
            )
            rows = sum(int(keys[k]) == _ROW_KEY for k in run)  # row boundaries stay, after the number
            digits = read_number_words(words).encode("utf-8") + b"\x00" * rows
        pieces += [data[done:lo], digits]
        done = hi
    pieces.append(data[done:])
    return np.frombuffer(b"".join(pieces), dtype=np.uint8)
