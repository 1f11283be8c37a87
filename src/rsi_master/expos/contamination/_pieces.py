"""Pieces of protected texts in the character reading, and the sets of them that fail.

A *piece* is a maximal stretch of a protected text found whole in the training stream
(see `_characters` for the reading). Each batch is searched for pieces seeded by the
texts' rare n-grams (`batch_pieces`), and keeps its new rows' reading (`Stream`). Once
every row is read, `character_findings`:

1. looks for the rest of a text whose piece was *cut*: alone in its rows (`_alone`)
   and stopping at a row's edge where the text goes on. The rest may be template alone
   (`more arrive. How many keys now?` cut from the numbers before it), which no rare
   n-gram seeds; so the rows within `char_window` of a cut piece are searched with every
   n-gram of its text. This runs over the whole stream, so the result does not depend on
   how rows fell into batches;
2. judges sets of pieces (one piece; nearby pieces alone in their rows; long pieces alone
   in their rows, anywhere): a set fails when it covers every distinctive character of
   its text (and, for one piece, `char_cover` of all of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._characters import VALUES, CharIndex, skeleton, words
from ._config import ContaminationConfig
from ._formats import ranges
from ._hashing import window_hashes
from ._table import HashTable

__all__ = ["Pieces", "Stream", "batch_pieces", "character_findings"]

_FIELDS = ("text", "start", "end", "first_row", "last_row", "lead", "trail")


@dataclass
class Pieces:
    """Pieces found in a stream of rows: maximal stretches of a text copied whole."""

    text: np.ndarray  # piece -> text
    start: np.ndarray  # piece -> first character of the text it covers
    end: np.ndarray  # piece -> after its last character
    first_row: np.ndarray
    last_row: np.ndarray
    lead: np.ndarray  # characters of its first row before it
    trail: np.ndarray  # characters of its last row after it

    @classmethod
    def join(cls, parts: list[Pieces]) -> Pieces:
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in _FIELDS))

    def take(self, which: np.ndarray) -> Pieces:
        return Pieces(*(getattr(self, f)[which] for f in _FIELDS))


@dataclass
class Stream:
    """The character reading of every row checked so far (each row once)."""

    parts: list[np.ndarray] = field(default_factory=list)
    sizes: list[np.ndarray] = field(default_factory=list)  # characters per row

    def reading(self) -> tuple[np.ndarray, np.ndarray]:
        """The whole reading and the characters of each row."""
        z = np.zeros(0, dtype=np.int64)
        return np.concatenate(self.parts or [z.astype(np.uint8)]), np.concatenate(self.sizes or [z])


def _low_byte(x: np.ndarray) -> np.ndarray:
    """Index of the lowest non-zero byte of each x (8 where x is 0)."""
    low = (x & (~x + np.uint64(1))).astype(np.float64)  # the lowest set bit alone: exact in float
    return np.where(x == 0, 8, np.log2(np.maximum(low, 1)).astype(np.int64) // 8)


def _high_byte(x: np.ndarray) -> np.ndarray:
    """Index of the highest non-zero byte of each x (-1 where x is 0)."""
    top = np.log2(np.maximum(x, 1).astype(np.float64)).astype(np.int64)
    top -= (x >> np.minimum(top, 63).astype(np.uint64)) == 0  # float rounding may overshoot by one
    return np.where(x == 0, -1, np.minimum(top, 63) // 8)


def _extend(stream: np.ndarray, text: np.ndarray, at: np.ndarray, where: np.ndarray, room: np.ndarray) -> np.ndarray:
    """The longest e <= |room| with s[at : at + e] == t[where : where + e] (negative room:
    leftwards, s[at - e : at] == t[where - e : where]), where `stream` and `text` are the
    `words` of s and t: eight bytes at a time, and most seeds in honest data stop within
    a few words."""
    left, room = room < 0, np.abs(room)
    done = np.zeros(len(at), dtype=np.int64)
    todo = np.flatnonzero(room > 0)
    while todo.size:
        d, lt = done[todo], left[todo]
        x = (
            stream[np.where(lt, at[todo] - d, at[todo] + d + 8)]
            ^ text[np.where(lt, where[todo] - d, where[todo] + d + 8)]
        )
        same = np.where(lt, 7 - _high_byte(x), _low_byte(x))  # equal bytes next to the stretch
        done[todo] = np.minimum(d + same, room[todo])
        todo = todo[(same == 8) & (done[todo] < room[todo])]
    return done


def _found(
    ci: CharIndex, table: HashTable, s: np.ndarray, hashes: np.ndarray, positions: np.ndarray, k: int
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
    stream, where = words(s), ci.offset[text] + pos
    back = _extend(stream, ci.words, at, where, -np.minimum(pos, at))
    ahead = _extend(stream, ci.words, at, where, np.minimum(ci.length[text] - pos, len(s) - at))
    start, end, at = pos - back, pos + ahead, at - back
    # Seeds of one piece (a gap of template between runs) extend to the same piece.
    keep = np.ones(len(at), dtype=bool)
    keep[1:] = (text[1:] != text[:-1]) | (diagonal[1:] != diagonal[:-1]) | (start[1:] != start[:-1])
    return text[keep], start[keep], end[keep], at[keep]


def _pieces(found: tuple[np.ndarray, ...], row: np.ndarray, row_start: np.ndarray, sizes: np.ndarray) -> Pieces:
    """Pieces with their rows (`row`: stream position -> row; rows start at `row_start`).

    A piece that runs on from the end of a row holding mostly other text (`...#### 154`
    then `more. What is...`: the `4` matches) also comes without that bit (and likewise
    at its end), so that the rows it is made of are seen as such (`_alone`)."""
    text, start, end, at = found
    stop = at + end - start
    first, last = row[at], row[stop - 1]
    head = row_start[first] + sizes[first] - at  # its characters in its first row
    tail = stop - row_start[last]
    lead, trail = at - row_start[first], row_start[last] + sizes[last] - stop
    cut_head = (last > first) & (head < lead)
    cut_tail = (last > first) & (tail < trail)
    trim = np.flatnonzero((cut_head | cut_tail) & (end - start > head * cut_head + tail * cut_tail))
    if len(trim):
        h, t = (head * cut_head)[trim], (tail * cut_tail)[trim]
        text = np.concatenate((text, text[trim]))
        start, end = np.concatenate((start, start[trim] + h)), np.concatenate((end, end[trim] - t))
        at = np.concatenate((at, at[trim] + h))
        stop = at + end - start
        first, last = row[at], row[stop - 1]
        lead, trail = at - row_start[first], row_start[last] + sizes[last] - stop
    return Pieces(text, start, end, first, last, lead, trail)


def batch_pieces(
    ci: CharIndex, cfg: ContaminationConfig, c: np.ndarray, first_row: int, new: int, stream: Stream
) -> Pieces:
    """The rare-seeded pieces in a batch's normalised rows `c` (NUL-separated; row 0 is
    `first_row`); the reading of its rows from `new` on is added to `stream`."""
    s, row = skeleton(c)
    sizes = np.bincount(row, minlength=int(np.count_nonzero(c == 0)) + 1)
    cut = int(np.searchsorted(row, new))
    stream.parts.append(s[cut:])
    stream.sizes.append(sizes[new:])
    if len(s) < cfg.char_gram or not len(ci.grams):
        return Pieces(*(np.zeros(0, dtype=np.int64) for _ in _FIELDS))
    found = _found(
        ci, ci.grams, s, window_hashes(VALUES[s], cfg.char_gram), np.arange(len(s) - cfg.char_gram + 1), cfg.char_gram
    )
    p = _pieces(found, row, np.cumsum(sizes) - sizes, sizes)
    p = p.take(np.flatnonzero(p.last_row >= new))  # the others were found with the previous batch
    p.first_row += first_row
    p.last_row += first_row
    return p


def _alone(cfg: ContaminationConfig, p: Pieces) -> np.ndarray:
    """Pieces that count with other pieces: `char_piece` characters or more, and at least
    half of their rows. The rows of an honest data set are whole examples, which share
    stretches of template and numbers with items all the time (`A box holds 95 coins.`
    in one row, `91 more are put in.` in another), but are not made of them."""
    span = p.end - p.start
    return (span >= cfg.char_piece) & (span >= p.lead + p.trail)  # lead + span + trail: its rows


def _template_pieces(
    ci: CharIndex, cfg: ContaminationConfig, p: Pieces, reading: np.ndarray, sizes: np.ndarray
) -> Pieces:
    """Pieces seeded by any n-gram (template too) of the texts of cut pieces, in the rows
    within `char_window` of them. A piece alone in its rows that stops at a row's edge
    where its text goes on was cut there (honest rows are whole examples: their pieces
    stop where the example differs, inside the row)."""
    cut = _alone(cfg, p) & (((p.start > 0) & (p.lead == 0)) | ((p.end < ci.length[p.text]) & (p.trail == 0)))
    if not cut.any():
        return p.take(np.zeros(0, dtype=np.int64))
    near = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.add.at(near, np.maximum(p.first_row[cut] - cfg.char_window, 0), 1)
    np.add.at(near, np.minimum(p.last_row[cut] + cfg.char_window + 1, len(sizes)), -1)
    rows = np.flatnonzero(np.cumsum(near[:-1]) > 0)
    row_start = np.cumsum(sizes) - sizes
    s = reading[ranges(row_start[rows], row_start[rows] + sizes[rows])]
    row = np.repeat(rows, sizes[rows])
    k = cfg.char_gram
    if len(s) < k:
        return p.take(np.zeros(0, dtype=np.int64))
    mine = np.isin(ci.all_grams.a, p.text[cut])  # a table of those texts alone: few hits to sort
    table = HashTable.build(ci.all_grams.hashes[mine], ci.all_grams.a[mine], ci.all_grams.b[mine])
    found = _found(ci, table, s, window_hashes(VALUES[s], k), np.arange(len(s) - k + 1), k)
    local_start = np.cumsum(sizes[rows]) - sizes[rows]  # where each row starts in `s`
    start_of = np.zeros(len(sizes), dtype=np.int64)
    start_of[rows] = local_start
    return _pieces(found, row, start_of, sizes)


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
    ci: CharIndex,
    cfg: ContaminationConfig,
    p: Pieces,
    eligible: np.ndarray,
    key: np.ndarray,
    whole: np.ndarray | None = None,
) -> np.ndarray:
    """Eligible pieces whose group (`key`, within one text) covers every distinctive
    character of the text and `char_cover` of all its characters. A row that differs from
    an item only in a number or a word (the same request with another hour, or `celsius`
    for `fahrenheit`) covers most of it, but not all. Without `whole` each group is one
    piece; with it, a group holding a piece in `whole` (a whole copy on its own) does not
    fail as a group: the copy fails, the partial pieces around it need not."""
    single = whole is None
    chosen = np.flatnonzero(eligible)
    out = np.zeros(len(p.text), dtype=bool)
    if not len(chosen):
        return out
    keys, group = np.unique(key[chosen], return_inverse=True)
    text = p.text[chosen]
    chars, marked = _covered(group, ci.offset[text] + p.start[chosen], ci.offset[text] + p.end[chosen], ci.marks)
    length, distinctive = np.zeros(len(keys), dtype=np.int64), np.zeros(len(keys), dtype=np.int64)
    length[group], distinctive[group] = ci.length[text], ci.distinctive[text]
    # With less than two n-grams' worth of distinctive characters, only one piece counts.
    enough = (distinctive >= 2 * cfg.char_gram) | single
    fails = (marked >= distinctive) & (chars >= cfg.char_cover * length) & enough
    if whole is not None:
        fails &= np.bincount(group, weights=whole[chosen], minlength=len(keys)) == 0
    out[chosen] = fails[group]
    return out


def _longest(p: Pieces) -> Pieces:
    """Of the pieces that share a text, first row and start, the longest: a piece cut
    short by the end of a batch is found whole in the next, which sees its rows again,
    and a template search finds rare-seeded pieces again."""
    if not len(p.text):
        return p
    if int(p.text.max()) < 1 << 19 and int(p.first_row.max()) < 1 << 24 and int(p.start.max()) < 1 << 20:
        key = (p.text << 44) | (p.first_row << 20) | p.start
        order = np.lexsort((-p.end, key))
        first = np.ones(len(order), dtype=bool)
        first[1:] = key[order][1:] != key[order][:-1]
    else:  # a key would overflow 64 bits
        order = np.lexsort((-p.end, p.start, p.first_row, p.text))
        first = np.ones(len(order), dtype=bool)
        first[1:] = np.any([x[order][1:] != x[order][:-1] for x in (p.text, p.first_row, p.start)], axis=0)
    return p.take(order[first])


def character_findings(
    ci: CharIndex, cfg: ContaminationConfig, found: list[Pieces], stream: Stream
) -> list[tuple[int, int, int, int, int]]:
    """(text, first row, last row, start, end) of every piece in a failing set."""
    reading, sizes = stream.reading()
    p = Pieces.join(found) if found else None
    if p is None or not len(p.text):
        return []
    p = _longest(p)
    more = _template_pieces(ci, cfg, p, reading, sizes)
    if len(more.text):
        p = _longest(Pieces.join([p, more]))
    span = p.end - p.start
    whole = _failing(ci, cfg, p, np.ones(len(span), dtype=bool), np.arange(len(span)))  # one piece
    fail = whole.copy()
    w = cfg.char_window
    near = _alone(cfg, p)
    for shift in (0, w // 2):  # pieces in nearby rows
        window = (p.first_row + shift) // w
        fail |= _failing(ci, cfg, p, near, p.text * (int(window.max()) + 1) + window, whole)
    fail |= _failing(ci, cfg, p, (span >= cfg.char_far) & near, p.text, whole)  # long pieces anywhere
    best: dict[tuple[int, int, int], tuple[int, int]] = {}
    for t, a, b, lo, hi in zip(*(x[fail].tolist() for x in (p.text, p.first_row, p.last_row, p.start, p.end))):
        if (t, a, b) not in best or hi - lo > best[t, a, b][1] - best[t, a, b][0]:
            best[t, a, b] = (lo, hi)
    return [(t, a, b, lo, hi) for (t, a, b), (lo, hi) in best.items()]
