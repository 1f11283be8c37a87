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

Each protected text contributes its *rare* character n-grams (`char_gram` characters,
found in fewer than `boilerplate_min_items` items); a hit in the stream lies on a
diagonal (stream position minus text position), and hits of one text on one diagonal,
at most two n-grams apart, form a *piece*: a stretch of the text copied whole. What a
set of pieces *covers* is the union of the text's rare n-grams they hit, in
characters; a text with fewer than two n-grams' worth of rare characters takes no part.

A text fails when at least `char_cover` of its rare characters are covered by
(1) one piece: the whole item, however its words were cut, glued or spelled, over
    consecutive rows included;
(2) pieces of `char_piece` characters or more whose first rows lie within one window
    of `char_window` rows (windows at offsets 0 and half a window, so pieces within
    half a window of rows always share one): an item cut into pieces put in nearby rows,
    in any order;
(3) pieces of `char_far` characters or more anywhere in the data: an item cut into
    long pieces put anywhere.
Every piece of a failing set is a finding (kind `characters`) naming its rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ._config import ContaminationConfig
from ._hashing import window_hashes
from ._normalise import ROW, tokenise
from ._table import HashTable

__all__ = ["CharIndex", "Pieces", "build_characters", "character_findings", "evidence", "pieces", "skeleton"]

_KEEP = np.zeros(256, dtype=bool)  # bytes of words and meaningful symbols (see _normalise)
for _c in b"abcdefghijklmnopqrstuvwxyz0123456789+-*/=<>|^%&~":
    _KEEP[_c] = True
_KEEP[0x80:] = True
_SKELETON = bytes(range(256)).translate(bytes.maketrans(b"01i|", b"olll"))
_STEP = 4  # the index keeps the rare n-grams at every _STEP-th position of a text
_VALUES = np.random.default_rng(0xC4A7).integers(1, 2**63, size=256, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[ord("0") : ord("9") + 1] = True
# `o` standing for a zero that number formatting would have dropped (`83.О`, `О5`).
_LEADING = re.compile(rb"(?<![a-z0-9.\x80-\xff])o+(?=[0-9])")
_FRACTION = re.compile(rb"(?<=[0-9])(\.[0-9]*?)o+(?![a-z0-9\x80-\xff])")


def _letter_zeros(c: np.ndarray) -> np.ndarray:
    """`c` without the letters `o` a skeleton reads as zeros where `_formats` drops zeros:
    leading (`О5` is `05`, which reads `5`) and ending a fraction (`83.О` is `83.0`, `83`)."""
    o = np.flatnonzero(c[:-1] == ord("o"))
    before = c[np.maximum(o - 1, 0)]
    if not len(o) or not (_DIGIT[c[o + 1]].any() or _DIGIT[before].any() or (before == ord(".")).any()):
        return c  # no `o` next to a digit: honest text nearly always
    text = _FRACTION.sub(lambda m: m.group(1).rstrip(b".").rstrip(b"0"), _LEADING.sub(b"", c.tobytes()))
    return np.frombuffer(text, dtype=np.uint8)


def skeleton(c: np.ndarray, across: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The character reading of normalised bytes `c` whose rows are separated by NUL
    bytes: the kept bytes under the skeleton, and the row of each. `rn` is `m` also
    across two rows when `across` (training rows are one stream; protected texts are not)."""
    c = _letter_zeros(c)
    keep = _KEEP[c]
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


def _words(s: np.ndarray) -> np.ndarray:
    """The 8 bytes at every position of `s`, with 8 zero bytes on either side:
    `w[x + 8]` holds s[x : x + 8] and `w[x]` holds s[x - 8 : x] (little-endian)."""
    padded = np.zeros(len(s) + 16, dtype=np.uint8)
    padded[8 : 8 + len(s)] = s
    return np.ndarray((len(s) + 9,), dtype="<u8", buffer=padded, strides=(1,))


def _low_byte(x: np.ndarray) -> np.ndarray:
    """Index of the lowest non-zero byte of each x (8 where x is 0)."""
    low = (x & (~x + np.uint64(1))).astype(np.float64)  # the lowest set bit alone: exact in float
    return np.where(x == 0, 8, np.log2(np.maximum(low, 1)).astype(np.int64) // 8)


def _high_byte(x: np.ndarray) -> np.ndarray:
    """Index of the highest non-zero byte of each x (-1 where x is 0)."""
    top = np.log2(np.maximum(x, 1).astype(np.float64)).astype(np.int64)
    top -= (x >> np.minimum(top, 63).astype(np.uint64)) == 0  # float rounding may overshoot by one
    return np.where(x == 0, -1, np.minimum(top, 63) // 8)


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
        return _words(self.flat)

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
    grams = window_hashes(_VALUES[s], k)[pos] if len(pos) else np.zeros(0, np.uint64)
    owner = text[pos]
    # Document frequency in items: an n-gram of the task's template is no evidence.
    pairs = np.unique(np.stack([grams.view(np.int64), text_item[owner]], axis=1), axis=0)
    distinct, counts = np.unique(pairs[:, 0], return_counts=True)
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


@dataclass
class Pieces:
    """Pieces found in a stream of rows: maximal stretches of a text copied whole."""

    text: np.ndarray  # piece -> text
    start: np.ndarray  # piece -> first character of the text it covers
    end: np.ndarray  # piece -> after its last character
    first_row: np.ndarray
    last_row: np.ndarray
    context: np.ndarray  # piece -> characters of its rows (first to last)

    @classmethod
    def join(cls, parts: list[Pieces]) -> Pieces:
        fields = ("text", "start", "end", "first_row", "last_row", "context")
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in fields))


def _empty() -> Pieces:
    z = np.zeros(0, dtype=np.int64)
    return Pieces(z, z, z, z, z, z)


def _extend(stream: np.ndarray, text: np.ndarray, at: np.ndarray, where: np.ndarray, room: np.ndarray) -> np.ndarray:
    """The longest e <= |room| with stream[at : at + e] == text[where : where + e] (negative
    room: leftwards, stream[at - e : at] == text[where - e : where]), eight bytes at a
    time (`_words` of both); most seeds in honest data stop within a few words."""
    left, room = room < 0, np.abs(room)
    done = np.zeros(len(at), dtype=np.int64)
    todo = np.flatnonzero(room > 0)
    while todo.size:
        d, lt = done[todo], left[todo]
        x = stream[np.where(lt, at[todo] - d, at[todo] + d + 8)] ^ text[np.where(lt, where[todo] - d, where[todo] + d + 8)]
        same = np.where(lt, 7 - _high_byte(x), _low_byte(x))  # equal bytes next to the stretch
        done[todo] = np.minimum(d + same, room[todo])
        todo = todo[(same == 8) & (done[todo] < room[todo])]
    return done


def _found(
    ci: CharIndex, table: HashTable, k: int, s: np.ndarray, hashes: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(text, start, end, stream position) of the pieces seeded by the hits of the stream
    n-grams at `positions` (increasing) in `table`."""
    at, entry = table.lookup(hashes[positions])
    at = positions[at]
    text, pos = table.a[entry], table.b[entry]
    # One seed per run of hits on a diagonal (they extend to the same piece). The hits come
    # in stream order, so a stable sort by (text, diagonal) leaves each run in text order.
    diagonal = at - pos
    order = np.argsort((text << 32) + diagonal + ci.length.max(), kind="stable")
    text, pos, at, diagonal = text[order], pos[order], at[order], diagonal[order]
    new = np.ones(len(at), dtype=bool)
    new[1:] = (text[1:] != text[:-1]) | (diagonal[1:] != diagonal[:-1]) | (pos[1:] - pos[:-1] > k)
    text, pos, at, diagonal = text[new], pos[new], at[new], diagonal[new]
    stream, where = _words(s), ci.offset[text] + pos
    back = _extend(stream, ci.words, at, where, -np.minimum(pos, at))
    ahead = _extend(stream, ci.words, at, where, np.minimum(ci.length[text] - pos, len(s) - at))
    start, end, at = pos - back, pos + ahead, at - back
    # Seeds of one piece (a gap of template between runs) extend to the same piece.
    keep = np.ones(len(at), dtype=bool)
    keep[1:] = (text[1:] != text[:-1]) | (diagonal[1:] != diagonal[:-1]) | (start[1:] != start[:-1])
    return text[keep], start[keep], end[keep], at[keep]


def _alone(cfg: ContaminationConfig, span: np.ndarray, context: np.ndarray) -> np.ndarray:
    """Pieces that count with other pieces: `char_piece` characters or more, and at least
    half of their rows. The rows of an honest data set are whole examples, which share
    stretches of template and numbers with items all the time (`A box holds 95 coins.`
    in one row, `91 more are put in.` in another), but are not made of them."""
    return (span >= cfg.char_piece) & (2 * span >= context)


def pieces(ci: CharIndex, cfg: ContaminationConfig, c: np.ndarray, first_row: int) -> Pieces:
    """The pieces of protected texts in normalised rows `c` (NUL-separated; row 0 is `first_row`).

    Pieces are seeded by rare n-grams; in the rows within `char_window` of a piece that
    is alone in its rows and cut at a row's edge, also by the template n-grams of its
    text, so that a piece made only of template (`more arrive. How many keys now?`, cut
    from the numbers before it) is found too.
    """
    k = cfg.char_gram
    s, row = skeleton(c)
    if len(s) < k or not len(ci.grams):
        return _empty()
    hashes = window_hashes(_VALUES[s], k)
    text, start, end, at = _found(ci, ci.grams, k, s, hashes, np.arange(len(hashes)))
    sizes = np.bincount(row)
    row_end = np.cumsum(sizes)  # characters up to the end of each row
    first, last = row[at], row[at + (end - start) - 1]
    # A piece alone in its rows that stops at a row's edge where its text goes on was cut
    # there: the rest may be template alone (honest rows are whole examples: their pieces
    # stop where the example differs, inside the row).
    cut = ((start > 0) & (at == row_end[first] - sizes[first])) | ((end < ci.length[text]) & (at + end - start == row_end[last]))
    cut &= _alone(cfg, end - start, row_end[last] - row_end[first] + sizes[first])
    if cut.any():
        near = np.zeros(len(sizes) + 1, dtype=np.int64)  # rows within the window of a cut piece
        np.add.at(near, np.maximum(first[cut] - cfg.char_window, 0), 1)
        np.add.at(near, np.minimum(last[cut] + cfg.char_window + 1, len(sizes)), -1)
        positions = np.flatnonzero((np.cumsum(near[:-1]) > 0)[row[: len(hashes)]])
        mine = np.isin(ci.all_grams.a, text[cut])  # a table of those texts alone: few hits to sort
        table = HashTable.build(ci.all_grams.hashes[mine], ci.all_grams.a[mine], ci.all_grams.b[mine])
        more = _found(ci, table, k, s, hashes, positions)
        text, start, end, at = (np.concatenate(pair) for pair in zip((text, start, end, at), more))
        order = np.lexsort((at, start, text))
        dup = np.zeros(len(order), dtype=bool)
        dup[1:] = (text[order][1:] == text[order][:-1]) & (start[order][1:] == start[order][:-1]) & (at[order][1:] == at[order][:-1])
        keep = order[~dup]
        text, start, end, at = text[keep], start[keep], end[keep], at[keep]
        first, last = row[at], row[at + (end - start) - 1]
    context = row_end[last] - row_end[first] + sizes[first]
    return Pieces(text, start, end, first_row + first, first_row + last, context)


def _covered(group: np.ndarray, start: np.ndarray, end: np.ndarray, marks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Characters, and distinctive characters (`marks`: their running count over `flat`),
    in the union of the intervals [start, end) of `flat` of each group 0..max(group)."""
    order = np.lexsort((start, group))
    group, start, end = group[order], start[order], end[order]
    shift = np.int64(1) << 40  # positions stay below 2**40
    reach = np.maximum.accumulate(group * shift + end) - group * shift  # furthest end so far in the group
    before = np.full(len(start), -1, dtype=np.int64)
    before[1:] = np.where(group[1:] == group[:-1], reach[:-1], -1)
    lo = np.minimum(np.maximum(start, before), end)
    chars = np.bincount(group, weights=end - lo)
    marked = np.bincount(group, weights=marks[end] - marks[lo])
    return chars.astype(np.int64), marked.astype(np.int64)


def _failing(
    ci: CharIndex, cfg: ContaminationConfig, p: Pieces, eligible: np.ndarray, key: np.ndarray, share: float
) -> np.ndarray:
    """Eligible pieces whose group (`key`, within one text) covers every distinctive
    character of the text and `share` of all its characters. A row that differs from an
    item only in a number (the same request with another hour) covers most of it, but
    not the number."""
    chosen = np.flatnonzero(eligible)
    out = np.zeros(len(p.text), dtype=bool)
    if not len(chosen):
        return out
    keys, group = np.unique(key[chosen], return_inverse=True)
    text = p.text[chosen]
    chars, marked = _covered(group, ci.offset[text] + p.start[chosen], ci.offset[text] + p.end[chosen], ci.marks)
    length, distinctive = np.zeros(len(keys), dtype=np.int64), np.zeros(len(keys), dtype=np.int64)
    length[group], distinctive[group] = ci.length[text], ci.distinctive[text]
    # With less than two n-grams' worth of distinctive characters, only a whole copy counts.
    enough = (distinctive >= 2 * cfg.char_gram) | (share >= 1.0)
    out[chosen] = ((marked >= distinctive) & (chars >= share * length) & enough)[group]
    return out


def character_findings(ci: CharIndex, cfg: ContaminationConfig, p: Pieces) -> list[tuple[int, int, int, int, int]]:
    """(text, first row, last row, start, end) of every piece in a failing set."""
    if not len(p.text):
        return []
    span = p.end - p.start
    fail = _failing(ci, cfg, p, np.ones(len(p.text), dtype=bool), np.arange(len(p.text)), cfg.char_cover)  # (1)
    w = cfg.char_window
    near = _alone(cfg, span, p.context)
    for shift in (0, w // 2):  # (2) pieces in nearby rows
        window = (p.first_row + shift) // w
        fail |= _failing(ci, cfg, p, near, p.text * (int(window.max()) + 1) + window, 0.0)
    fail |= _failing(ci, cfg, p, (span >= cfg.char_far) & near, p.text, 0.0)  # (3) long pieces anywhere
    best: dict[tuple[int, int, int], tuple[int, int]] = {}
    for t, a, b, lo, hi in zip(*(x[fail].tolist() for x in (p.text, p.first_row, p.last_row, p.start, p.end))):
        if (t, a, b) not in best or hi - lo > best[t, a, b][1] - best[t, a, b][0]:
            best[t, a, b] = (lo, hi)
    return [(t, a, b, lo, hi) for (t, a, b), (lo, hi) in best.items()]


def evidence(ci: CharIndex, text: int, start: int, end: int) -> str:
    o = int(ci.offset[text])
    return ci.flat[o + start : o + end].tobytes().decode("utf-8", "replace")
