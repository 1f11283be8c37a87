"""Number formatting in normalised bytes: thousands separators, leading zeros and zero
fractions (`1,000` -> `1000`, `007` -> `7`, `1000.0` -> `1000`, `2.50` -> `2.5`), as
array operations over a batch's bytes (see `_normalise`)."""

from __future__ import annotations

import numpy as np

__all__ = ["canonical_numbers", "drop", "ranges"]

_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[ord("0") : ord("9") + 1] = True
_LETTER = np.zeros(256, dtype=bool)  # lowercased bytes: ASCII letters and every non-ASCII byte
_LETTER[ord("a") : ord("z") + 1] = True
_LETTER[0x80:] = True
_ZERO_ONE = np.zeros(256, dtype=bool)  # the digits the character reading reads as letters (`o`, `l`)
_ZERO_ONE[[ord("0"), ord("1")]] = True


def _at(mask: np.ndarray, idx: np.ndarray, fill: int = False) -> np.ndarray:  # a bool mask or bytes
    """mask[idx] with `fill` where idx is out of range."""
    ok = (idx >= 0) & (idx < len(mask))
    return np.where(ok, mask[np.clip(idx, 0, max(len(mask) - 1, 0))], fill)


def _separators(c: np.ndarray, i: np.ndarray) -> np.ndarray:
    """Whether each comma `i` sits between a digit and exactly three digits."""
    around = np.add.outer(i, np.arange(-1, 5))  # the byte before each comma and four after
    digit = _DIGIT[c[np.clip(around, 0, len(c) - 1)]] & (around >= 0) & (around < len(c))
    return digit[:, 0] & digit[:, 2] & digit[:, 3] & digit[:, 4] & ~digit[:, 5]


def _thousands(c: np.ndarray) -> np.ndarray:
    """Positions of thousands separators (`1,000`, `12,345,678`).

    A comma between a digit and exactly three digits is a separator only when every
    comma of its digits-and-commas span is one and the span does not open a list:
    `[1,005]` and `5,8,005` are lists (program examples), and a list written with
    leading zeros must not turn into one big number.
    """
    i = np.flatnonzero(c == ord(","))
    if not len(i):
        return i
    # Most commas are followed by a space: only a comma between two digits can qualify,
    # and when none of those does, no pass over the buffer is needed.
    n = len(c)
    cand = i[(i > 0) & (i + 3 < n)]
    for k in (-1, 1, 2, 3):  # a digit before, three after (lists like `1,2,3` stop at the second)
        cand = cand[_DIGIT[c[cand + k]]]
    if not (cand + 4 >= n).any() and _DIGIT[c[cand[cand + 4 < n] + 4]].all():
        return i[:0]  # every candidate has a fourth digit: none is a separator
    ok = _separators(c, i)
    member = _DIGIT[c] | (c == ord(","))
    edge = np.flatnonzero(np.diff(np.concatenate(([False], member, [False])).view(np.int8)))
    span_starts = edge[0::2]
    span = np.searchsorted(span_starts, i, side="right") - 1
    commas = np.bincount(span, minlength=len(span_starts))
    good = np.bincount(span[ok], minlength=len(span_starts))
    opener = np.isin(_at(c, span_starts - 1, 0), (ord("["), ord(".")))  # a list, or a fraction
    valid = (commas == good) & ~opener & _DIGIT[c[span_starts]]
    return i[ok & valid[span]]


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends of the runs of True in `mask`."""
    edge = np.flatnonzero(np.diff(np.concatenate(([False], mask, [False])).view(np.int8)))
    return edge[0::2], edge[1::2]


def ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """All positions of the half-open ranges [start, end)."""
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(total)


def _run_starts(c: np.ndarray, pos: np.ndarray, member: np.ndarray, limit: int = 24) -> np.ndarray:
    """For positions `pos` of bytes in class `member`, the start of the run of such bytes
    holding each. Steps left over the few bytes before each position (numbers are
    short); a run longer than `limit` falls back to one pass over the whole buffer."""
    out = pos.copy()
    active = np.arange(len(pos))
    for _ in range(limit):
        if not len(active):
            return out
        before = out[active] - 1
        more = before >= 0
        more[more] = member[c[before[more]]]
        out[active[more]] = before[more]
        active = active[more]
    if len(active):
        run_starts, _ = _runs(member[c])
        out[active] = run_starts[np.searchsorted(run_starts, out[active], side="right") - 1]
    return out


def _run_ends(c: np.ndarray, pos: np.ndarray, member: np.ndarray, limit: int = 24) -> np.ndarray:
    """For positions `pos` of bytes in class `member`, the end (exclusive) of the run of such
    bytes holding each; `_run_starts` the other way."""
    out = pos.copy()
    active = np.arange(len(pos))
    for _ in range(limit):
        if not len(active):
            break
        after = out[active] + 1
        more = after < len(c)
        more[more] = member[c[after[more]]]
        out[active[more]] = after[more]
        active = active[more]
    if len(active):
        _, run_ends = _runs(member[c])
        out[active] = run_ends[np.searchsorted(run_ends, out[active], side="right")] - 1
    return out + 1


def _number_deletions(c: np.ndarray) -> np.ndarray:
    """Positions to delete so that numbers are canonical (leading zeros, zero fractions).

    Works on runs of zeros and on decimal points only, both sparse in text: no pass over
    the buffer besides finding its zeros.
    """
    n = len(c)
    zeros = np.flatnonzero(c == ord("0"))
    if not len(zeros):
        return zeros
    cut = np.flatnonzero(np.diff(zeros) != 1)
    zero_starts = zeros[np.concatenate(([0], cut + 1))]
    zero_ends = zeros[np.concatenate((cut, [len(zeros) - 1]))] + 1
    prev = _at(c, zero_starts - 1, 0)
    prev2 = _at(c, zero_starts - 2, 0)
    nxt = _at(c, zero_ends, 0)
    in_fraction = (prev == ord(".")) & _DIGIT[prev2]
    # Leading zeros: a zero run opening a number (not a fraction); keep one zero when
    # the whole number is zeros (`000` -> `0`). Zeros and ones glued to a following letter
    # (`01a`: `Ola` in ASCII look-alikes, which the character reading reads as letters) are
    # a word, not a number: their zeros stay. Other digits before a letter stay a number
    # (`17:00please` is `17:00 please` with its space made invisible).
    opens = ~_DIGIT[prev] & ~in_fraction
    glued = opens & (nxt == ord("1"))
    if glued.any():
        at = np.flatnonzero(glued)
        ends = _run_ends(c, zero_starts[at], _ZERO_ONE)
        word = _LETTER[_at(c, ends, 0)]
        opens[at[word]] = False
    leading_end = np.where(_DIGIT[nxt], zero_ends, zero_ends - 1)
    leading = ranges(zero_starts[opens], leading_end[opens])
    # Trailing zeros of a fraction: a zero run that ends the digits after a point.
    closes = ~_DIGIT[nxt] & (zero_ends <= n)
    ends = zero_ends[closes]
    starts = zero_starts[closes]
    if len(ends):
        run_start = _run_starts(c, starts, _DIGIT)
        fraction = (_at(c, run_start - 1, 0) == ord(".")) & _DIGIT[_at(c, run_start - 2, 0)]
        whole = fraction & (run_start == starts)  # `1000.0`: the point goes too
        trailing = ranges(np.where(whole, starts - 1, starts)[fraction], ends[fraction])
    else:
        trailing = leading[:0]
    return np.concatenate((leading, trailing))


def drop(c: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """`c` without the bytes at `positions` (few: copied as the slices between them)."""
    if not len(positions):
        return c
    positions = np.unique(positions)
    starts = np.concatenate(([0], positions + 1)).tolist()
    ends = np.concatenate((positions, [len(c)])).tolist()
    return np.concatenate([c[s:e] for s, e in zip(starts, ends)])


def canonical_numbers(c: np.ndarray) -> np.ndarray:
    """`c` (lowercased bytes) with its numbers written canonically."""
    c = drop(c, _thousands(c))
    return drop(c, _number_deletions(c))
