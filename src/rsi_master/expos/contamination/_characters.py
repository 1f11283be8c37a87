"""The character reading: a protected item matched letter by letter, not word by word.

The word methods read tokens, so an item whose words are cut (`sh` | `ells` over two
rows), glued (invisible characters both inside words and in place of spaces) or spelled
with ASCII look-alikes (`rn` for `m`, `0` for `O`, `1` for `l`) shares no word with
itself. Here both sides, every protected text and the training stream, are read once
more as one string of characters:

* the normalised bytes (`_normalise`: Unicode fold, case, numbers in words, number
  formatting) without white space, punctuation, clause and row markers: only the bytes
  of words and meaningful symbols, rows joined end to end;
* under the full TR39 skeleton, ASCII included, after case folding: `0` and `o` are one
  character, `1`, `l`, `i` and `|` another (TR39 maps `I`, `1` and `|` to `l`; case folding
  puts `i` with `I`), and `rn` is `m` (TR39 maps `m` to `rn`; written the other way
  round here, which changes nothing when both sides are read so).

This module holds the reading (`skeleton`) and the index side of it (`CharIndex`):
each protected text's reading, its *rare* character n-grams (`char_gram` characters,
found in fewer than `boilerplate_min_items` items; those at every `_STEP`-th position
seed pieces) and its *distinctive* characters (those under a rare n-gram). Finding
pieces and judging them is `_pieces`; docs/contamination.md, "The character reading",
states what it covers and what it does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ._config import ContaminationConfig
from ._hashing import window_hashes
from ._normalise import ROW, tokenise
from ._table import HashTable, owner_counts

__all__ = ["VALUES", "CharIndex", "build_characters", "evidence", "skeleton", "words"]

_KEEP = np.zeros(256, dtype=bool)  # bytes of words and meaningful symbols (see _normalise)
for _c in b"abcdefghijklmnopqrstuvwxyz0123456789+-*/=<>|^%&~":
    _KEEP[_c] = True
_KEEP[0x80:] = True
_SKELETON = bytes(range(256)).translate(bytes.maketrans(b"01i|", b"olll"))
_STEP = 4  # the index keeps the rare n-grams at every _STEP-th position of a text
VALUES = np.random.default_rng(0xC4A7).integers(1, 2**63, size=256, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[ord("0") : ord("9") + 1] = True
_NUMBER_MARK = np.zeros(256, dtype=bool)
_NUMBER_MARK[[ord("."), ord(","), ord(":")]] = True
_DIGIT_OR_O = _DIGIT.copy()
_DIGIT_OR_O[ord("o")] = True
_LETTER = np.zeros(256, dtype=bool)
_LETTER[ord("a") : ord("z") + 1] = True
_LETTER[0x80:] = True
# `o` standing for a zero that number formatting would have dropped (`83.О`, `О5`).
_LEADING = re.compile(rb"(?<![a-z0-9.\x80-\xff])o+(?=[0-9]+(?![a-z0-9\x80-\xff]))")  # not `o1ive`
_ZEROS = re.compile(rb"(?<![a-z0-9.\x80-\xff])oo+(?![a-z0-9\x80-\xff])")  # `00` is `0`
_FRACTION = re.compile(rb"(?<=[0-9])(\.[0-9]*?)o+(?![a-z0-9\x80-\xff])")


def _letter_zeros(c: np.ndarray) -> np.ndarray:
    """`c` without the letters `o` a skeleton reads as zeros where `_formats` drops zeros:
    leading (`О5` is `05`, which reads `5`), ending a fraction (`83.О` is `83.0`, `83`),
    all but one of a number of zeros (`17:ОО` is `17:00`, `17:0`)."""
    # Each pattern starts at the first `o` of a run (an `o` after a non-letter) that is either
    # after a digit or `.` (_FRACTION) or before a digit or another `o` (_LEADING, _ZEROS). With
    # no such `o` none of them matches, and each leaves the text as it was for the next one.
    o = np.flatnonzero(c == ord("o"))
    before = np.where(o > 0, c[np.maximum(o - 1, 0)], ord(" "))  # the string's start is a non-letter
    after = np.where(o + 1 < len(c), c[np.minimum(o + 1, len(c) - 1)], ord(" "))
    starts = ~_LETTER[before]
    if not (starts & (_DIGIT[before] | (before == ord(".")) | _DIGIT[after] | (after == ord("o")))).any():
        return c  # no `o` that a number could own: honest text nearly always (`indigo3` is a word)
    text = _FRACTION.sub(lambda m: m.group(1).rstrip(b".").rstrip(b"0"), _LEADING.sub(b"", c.tobytes()))
    text = _ZEROS.sub(b"o", text)
    return np.frombuffer(text, dtype=np.uint8)


def skeleton(c: np.ndarray, across: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The character reading of normalised bytes `c` whose rows are separated by NUL
    bytes: the kept bytes under the skeleton, and the row of each. `rn` is `m` also
    across two rows when `across` (training rows are one stream; protected texts are not)."""
    c = _letter_zeros(c)
    keep = _KEEP[c]
    # `.`, `,` and `:` between two digits stay (`4.5` is not `45.0`, `[4,5]` not `[45]`,
    # `1:05` not `105`); `o` counts as a digit there, as the reading makes it one.
    marks = np.flatnonzero(_NUMBER_MARK[c[1:-1]]) + 1
    if len(marks):
        keep[marks[_DIGIT_OR_O[c[marks - 1]] & _DIGIT_OR_O[c[marks + 1]]]] = True
    row = np.cumsum(c == 0, dtype=np.int64)[keep]
    s = np.frombuffer(c[keep].tobytes().translate(_SKELETON), dtype=np.uint8)
    rn = np.flatnonzero((s[:-1] == ord("r")) & (s[1:] == ord("n")) & (across | (row[:-1] == row[1:])))
    if len(rn):
        s = s.copy()
        s[rn] = ord("m")
        gone = np.ones(len(s), dtype=bool)
        gone[rn + 1] = False
        s, row = s[gone], row[gone]
    return s, row


def words(s: np.ndarray) -> np.ndarray:
    """The 8 bytes at every position of `s`, with 8 zero bytes on either side:
    `w[x + 8]` holds s[x : x + 8] and `w[x]` holds s[x - 8 : x] (little-endian)."""
    padded = np.zeros(len(s) + 16, dtype=np.uint8)
    padded[8 : 8 + len(s)] = s
    return np.ndarray((len(s) + 9,), dtype="<u8", buffer=padded, strides=(1,))


@dataclass
class CharIndex:
    """The protected texts in the character reading (text numbers as in the index)."""

    grams: HashTable  # rare n-grams: (hash, text, position in the text's reading)
    all_grams: HashTable  # every n-gram, template included, for the rows near a piece
    distinctive: np.ndarray  # text -> its distinctive characters (0: the text takes no part)
    marks: np.ndarray  # distinctive characters in flat[:i], for every i
    length: np.ndarray  # text -> characters of its reading
    flat: np.ndarray  # every text's reading, one after the other (uint8)
    offset: np.ndarray  # text -> start of its reading in `flat`

    @cached_property
    def words(self) -> np.ndarray:
        return words(self.flat)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "words"}  # rebuilt on load


def build_characters(texts: list[str], text_item: np.ndarray, cfg: ContaminationConfig) -> CharIndex:
    """The character reading of the index's texts (`texts[t]` belongs to item `text_item[t]`)."""
    k = cfg.char_gram
    tok = tokenise(ROW.join(t.replace(ROW, " ") for t in texts))
    s, text = skeleton(np.frombuffer(tok.buffer, dtype=np.uint8), across=False)
    n = len(texts)
    offset = np.searchsorted(text, np.arange(n)).astype(np.int64)
    length = np.bincount(text, minlength=n).astype(np.int64)
    pos = np.flatnonzero(text[: max(len(s) - k + 1, 0)] == text[k - 1 :]) if len(s) >= k else np.zeros(0, np.int64)
    grams = window_hashes(VALUES[s], k)[pos] if len(pos) else np.zeros(0, np.uint64)
    owner = text[pos]
    # Document frequency in items: an n-gram of the task's template is no evidence.
    distinct, counts = owner_counts(grams.view(np.int64), np.asarray(text_item[owner], dtype=np.int64))
    rare = counts[np.searchsorted(distinct, grams.view(np.int64))] < cfg.boilerplate_min_items
    # Distinctive characters: those under a rare n-gram (numbers and names with the few
    # characters around them, not the template between them).
    depth = np.zeros(len(s) + 1, dtype=np.int64)
    np.add.at(depth, pos[rare], 1)
    np.add.at(depth, pos[rare] + k, -1)
    distinctive = np.cumsum(depth[:-1]) > 0
    count = np.bincount(text[distinctive], minlength=n).astype(np.int64)
    # Every _STEP-th position only: a piece holding _STEP consecutive n-grams holds one of
    # them, and the stream has a quarter of the hits to sort and extend.
    take = (count[owner] > 0) & ((pos - offset[owner]) % _STEP == 0)
    rare_table = HashTable.build(grams[take & rare], owner[take & rare], (pos - offset[owner])[take & rare])
    all_table = HashTable.build(grams[take], owner[take], (pos - offset[owner])[take])
    marks = np.concatenate(([0], np.cumsum(distinctive))).astype(np.int64)
    return CharIndex(rare_table, all_table, count, marks, length, s.copy(), offset)


def evidence(ci: CharIndex, text: int, start: int, end: int) -> str:
    o = int(ci.offset[text])
    return ci.flat[o + start : o + end].tobytes().decode("utf-8", "replace")
