"""Text normalisation and tokenisation, vectorised over bytes with numpy.

The same code runs on protected items and on training text, so every formatting
difference it erases (case, whitespace, punctuation, quote style, number formatting)
cannot hide a copy:

* lowercase (and NFKC for non-ASCII text, with curly quotes and dashes unified);
* `1,000` -> `1000`, `1000.0` -> `1000`, `2.50` -> `2.5`, `007` -> `7`;
* apostrophes vanish (`Lea's` = `Leas`), other punctuation separates words; `-`
  between two letters is a hyphen, not a minus;
* symbols that carry meaning here (`+ - * / = < > | ^ % & ~`, so `45+23` differs from
  `45-23` and `->` survives in program examples) are tokens of their own;
* a clause boundary (`. ? ! ; : ,` or a closing bracket followed by whitespace)
  becomes a CLAUSE token (a bare line break does not: inserting line breaks between
  words is a whitespace change); a NUL byte separates the rows of a batch (ROW).

Why bytes and numpy: a chain of `re.sub` passes runs at about 10 MB/s and splitting
into Python strings at 30 MB/s, far from the 20 MB/s target for the whole check. Here a
batch becomes one uint8 array; character classes, number rules and token boundaries
are array operations, and each token is reduced to a 64-bit hash without ever
becoming a Python string (strings are decoded only for evidence and for the index
vocabulary).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

__all__ = ["CLAUSE", "CLAUSE_HASH", "ROW", "ROW_HASH", "Tokens", "normalise", "powers_of", "ranges", "tokenise", "tokens"]

ROW = "\x00"
CLAUSE = "\x01"  # as a token string; it never occurs in text (tokenise drops control bytes)

_UNICODE = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "`": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"', "\u2033": '"',
        "\u2212": "-", "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-",
        "\u00a0": " ", "\u2026": "...",
    }
)

# Token classes of a byte.
_SEP, _WORD, _OP, _CLAUSE, _ROW, _BOUND = 0, 1, 2, 3, 4, 5
_CLASS = np.zeros(256, dtype=np.uint8)
for _c in b"abcdefghijklmnopqrstuvwxyz0123456789":
    _CLASS[_c] = _WORD
_CLASS[0x80:] = _WORD  # UTF-8 bytes of non-ASCII letters
for _c in b"+-*/=<>|^%&~":
    _CLASS[_c] = _OP
_CLASS[0] = _ROW
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[ord("0") : ord("9") + 1] = True
_LETTER = (_CLASS == _WORD) & ~_DIGIT
for _c in b".?!;:,)]}":
    _CLASS[_c] = _BOUND  # a clause boundary when whitespace follows, else a separator
_SPACE = np.zeros(256, dtype=bool)
for _c in b" \t\r\n\x0b\x0c":
    _SPACE[_c] = True
_BYTE_VALUE = np.random.default_rng(0xB17E).integers(1, 2**63, size=256, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
_BASE = np.uint64(0x100000001B3)  # odd, so invertible modulo 2^64
_BASE_INVERSE = np.uint64(pow(0x100000001B3, -1, 1 << 64))
ROW_HASH = np.uint64(1)
CLAUSE_HASH = np.uint64(2)


@dataclass(frozen=True)
class Tokens:
    """Tokens of a text: a 64-bit hash each (ROW_HASH / CLAUSE_HASH for markers) and
    the byte span of each token in the normalised buffer, for decoding."""

    hashes: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    buffer: bytes

    def text(self, index: int) -> str:
        if self.hashes[index] == ROW_HASH:
            return ROW
        if self.hashes[index] == CLAUSE_HASH:
            return CLAUSE
        return self.buffer[self.starts[index] : self.ends[index]].decode("utf-8", "replace")

    def __len__(self) -> int:
        return len(self.hashes)


def _at(mask: np.ndarray, idx: np.ndarray, fill: bool = False) -> np.ndarray:
    """mask[idx] with `fill` where idx is out of range."""
    ok = (idx >= 0) & (idx < len(mask))
    return np.where(ok, mask[np.clip(idx, 0, max(len(mask) - 1, 0))], fill)


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
    around = np.add.outer(i, np.arange(-1, 5))  # the byte before each comma and four after
    digit = _DIGIT[c[np.clip(around, 0, len(c) - 1)]] & (around >= 0) & (around < len(c))
    ok = digit[:, 0] & digit[:, 2] & digit[:, 3] & digit[:, 4] & ~digit[:, 5]
    if not ok.any():
        return i[:0]
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


def _number_deletions(c: np.ndarray) -> np.ndarray:
    """Positions to delete so that numbers are canonical (leading zeros, zero fractions).

    Works on runs of zeros and on decimal points only, both sparse in text.
    """
    n = len(c)
    zero_starts, zero_ends = _runs(c == ord("0"))
    if not len(zero_starts):
        return zero_starts
    prev = _at(c, zero_starts - 1, 0)
    prev2 = _at(c, zero_starts - 2, 0)
    nxt = _at(c, zero_ends, 0)
    in_fraction = (prev == ord(".")) & _DIGIT[prev2]
    # Leading zeros: a zero run opening a number (not a fraction); keep one zero when
    # the whole number is zeros (`000` -> `0`).
    opens = ~_DIGIT[prev] & ~in_fraction
    leading_end = np.where(_DIGIT[nxt], zero_ends, zero_ends - 1)
    leading = ranges(zero_starts[opens], leading_end[opens])
    # Trailing zeros of a fraction: a zero run that ends the digits after a point.
    closes = ~_DIGIT[nxt] & (zero_ends <= n)
    ends = zero_ends[closes]
    starts = zero_starts[closes]
    if len(ends):
        digit_starts, _ = _runs(_DIGIT[c])
        run_start = digit_starts[np.searchsorted(digit_starts, starts, side="right") - 1]
        fraction = (_at(c, run_start - 1, 0) == ord(".")) & _DIGIT[_at(c, run_start - 2, 0)]
        whole = fraction & (run_start == starts)  # `1000.0`: the point goes too
        trailing = ranges(np.where(whole, starts - 1, starts)[fraction], ends[fraction])
    else:
        trailing = leading[:0]
    return np.concatenate((leading, trailing))


_POWERS: list[np.ndarray] = [np.ones(1, dtype=np.uint64), np.ones(1, dtype=np.uint64)]


def powers_of(n: int) -> tuple[np.ndarray, np.ndarray]:
    """BASE**i and BASE**-i modulo 2**64 for i <= n, cached and grown by doubling."""
    if len(_POWERS[0]) <= n:
        size = max(n + 1, 2 * len(_POWERS[0]), 1 << 16)
        for k, base in enumerate((_BASE, _BASE_INVERSE)):
            p = np.full(size, base, dtype=np.uint64)
            p[0] = 1
            _POWERS[k] = np.cumprod(p, dtype=np.uint64)
    return _POWERS[0], _POWERS[1]


def _drop(c: np.ndarray, positions: np.ndarray) -> np.ndarray:
    if not len(positions):
        return c
    keep = np.ones(len(c), dtype=bool)
    keep[positions] = False
    return c[keep]


def tokenise(text: str) -> Tokens:
    """Normalise `text` and cut it into tokens, all in array operations."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).translate(_UNICODE)
    c = np.frombuffer(text.lower().replace("'", "").encode("utf-8"), dtype=np.uint8)
    c = _drop(c, _thousands(c))
    c = _drop(c, _number_deletions(c))
    n = len(c)
    cls = _CLASS[c]
    hyphen = np.flatnonzero(cls == _OP)
    hyphen = hyphen[c[hyphen] == ord("-")]
    if len(hyphen):
        letters = _LETTER[_at(c, hyphen - 1, 0)] & _LETTER[_at(c, hyphen + 1, 0)]
        cls[hyphen[letters]] = _SEP
    bound = np.flatnonzero(cls == _BOUND)
    cls[bound] = np.where(_SPACE[_at(c, bound + 1, ord(" "))], _CLAUSE, _SEP)  # followed by whitespace or the end
    # Runs of one class are tokens (one nonzero pass over the batch); SEP runs are
    # dropped, and a run of markers (empty rows, `?!` before a space) is cut into
    # one-byte tokens, since each marker counts.
    change = np.empty(n + 1, dtype=bool)
    change[0] = change[n] = True
    np.not_equal(cls[1:], cls[:-1], out=change[1:n])
    bounds = np.flatnonzero(change)
    starts, ends = bounds[:-1], bounds[1:]
    kinds = cls[starts] if n else cls[:0]
    keep = kinds != _SEP
    starts, ends, kinds = starts[keep], ends[keep], kinds[keep]
    marker = (kinds == _CLAUSE) | (kinds == _ROW)
    split = marker & (ends - starts > 1)
    if split.any():
        lengths = np.where(split, ends - starts, 1)
        starts = ranges(starts, starts + lengths)
        ends = np.where(np.repeat(split, lengths), starts + 1, np.repeat(ends, lengths))
    powers, inverse = powers_of(n)
    prefix = np.empty(n + 1, dtype=np.uint64)
    prefix[0] = 0
    weighted = _BYTE_VALUE[c]
    weighted *= powers[:n]
    np.cumsum(weighted, out=prefix[1:])
    hashes = (prefix[ends] - prefix[starts]) * inverse[starts]
    hashes ^= (ends - starts).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    kinds = cls[starts]
    hashes[kinds == _CLAUSE] = CLAUSE_HASH
    hashes[kinds == _ROW] = ROW_HASH
    return Tokens(hashes, starts, ends, c.tobytes())


def tokens(text: str) -> list[str]:
    """Normalised tokens of one text (CLAUSE markers included), as strings."""
    tok = tokenise(text.replace(ROW, " "))
    return [tok.text(i) for i in range(len(tok))]


def normalise(text: str) -> str:
    """The normalised words of `text` joined by single spaces (clause markers dropped)."""
    return " ".join(t for t in tokens(text) if t != CLAUSE)
