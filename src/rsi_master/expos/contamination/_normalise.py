"""Text normalisation and tokenisation, vectorised over bytes with numpy.

The same code runs on protected items and on training text, so every formatting
difference it erases (case, whitespace, punctuation, quote style, number formatting,
how a character is encoded) cannot hide a copy:

* non-ASCII characters are folded to what a reader sees (`_unicode.fold`: look-alike
  letters of other scripts, fullwidth forms, invisible characters, digits of every
  script, curly quotes and dashes), then everything is lowercased;
* numbers in English words become digits (`_numbers.spelled_numbers`, after the
  tokens are cut: `forty-two` -> `42`);
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

from dataclasses import dataclass

import numpy as np

from ._formats import canonical_numbers, ranges
from ._keys import BYTE_VALUE, LENGTH_MIX, powers_of, token_hashes, token_keys
from ._numbers import spelled_numbers
from ._unicode import fold

__all__ = [
    "CLAUSE",
    "CLAUSE_HASH",
    "MARKER_KEYS",
    "ROW",
    "ROW_HASH",
    "Scan",
    "Tokens",
    "normalise",
    "ranges",
    "scan",
    "tokenise",
    "tokens",
]

ROW = "\x00"
CLAUSE = "\x01"  # as a token string; it never occurs in text (tokenise drops control bytes)

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
_CLASS_TABLE = _CLASS.tobytes()
_AFTER_BOUND = np.where(_SPACE, _CLAUSE, _SEP).astype(np.uint8)  # class of a boundary byte by the byte after it
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


def _normalised(text: str) -> np.ndarray:
    """The normalised bytes of `text`: Unicode fold, case, apostrophes and number formatting."""
    return canonical_numbers(np.frombuffer(fold(text).lower().replace("'", "").encode("utf-8"), dtype=np.uint8))


def _cut(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Normalised bytes, token spans, byte classes and token keys of `text`, with
    numbers in words already turned into digits (a second pass only when there were any)."""
    c = _normalised(text)
    starts, ends, cls = _spans(c)
    keys = token_keys(c, starts, ends)
    spelled = spelled_numbers(c, starts, ends, keys)
    if spelled is not None:
        c = spelled
        starts, ends, cls = _spans(c)
        keys = token_keys(c, starts, ends)
    return c, starts, ends, cls, keys


def _spans(c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Byte spans `[start, end)` of the tokens of normalised bytes `c`, and the class of
    every byte (a token is a run of one class; SEP runs are no token, and each marker
    byte is a token of its own)."""
    n = len(c)
    cls = np.frombuffer(c.tobytes().translate(_CLASS_TABLE), dtype=np.uint8).copy()  # C speed, unlike _CLASS[c]
    padded = np.empty(n + 2, dtype=np.uint8)  # a space on either side: no bounds checks
    padded[0] = padded[n + 1] = ord(" ")
    padded[1 : n + 1] = c
    hyphen = np.flatnonzero(c == ord("-"))
    if len(hyphen):
        letters = _LETTER[padded[hyphen]] & _LETTER[padded[hyphen + 2]]
        cls[hyphen[letters]] = _SEP
    bound = np.flatnonzero(cls == _BOUND)
    cls[bound] = _AFTER_BOUND[padded[bound + 2]]  # a clause boundary when whitespace (or the end) follows
    # A token starts where the class changes to a non-SEP one, or at any marker byte
    # (a run of markers, e.g. empty rows or `?!` before a space, is one token per byte);
    # it ends where the next run starts or a SEP byte follows.
    word = cls != _SEP
    first = np.empty(n, dtype=bool)
    if n:
        first[0] = word[0]
        np.not_equal(cls[1:], cls[:-1], out=first[1:])
        first[1:] |= cls[1:] >= _CLAUSE
        first &= word
    last = np.empty(n, dtype=bool)
    if n:
        last[n - 1] = word[n - 1]
        np.logical_and(word[:-1], first[1:] | ~word[1:], out=last[:-1])
    return np.flatnonzero(first), np.flatnonzero(last) + 1, cls


def tokenise(text: str) -> Tokens:
    """Normalise `text` and cut it into tokens, all in array operations."""
    c, starts, ends, cls, _ = _cut(text)
    n = len(c)
    powers, inverse = powers_of(n)
    prefix = np.empty(n + 1, dtype=np.uint64)
    prefix[0] = 0
    weighted = BYTE_VALUE[c]
    weighted *= powers[:n]
    np.cumsum(weighted, out=prefix[1:])
    hashes = (prefix[ends] - prefix[starts]) * inverse[starts]
    hashes ^= (ends - starts).astype(np.uint64) * LENGTH_MIX
    kinds = cls[starts]
    hashes[kinds == _CLAUSE] = CLAUSE_HASH
    hashes[kinds == _ROW] = ROW_HASH
    return Tokens(hashes, starts, ends, c.tobytes())


@dataclass(frozen=True)
class Scan:
    """A normalised text as token spans with vocabulary keys (see `scan`); token hashes
    (`tokenise`'s) are computed only for the tokens that need them."""

    c: np.ndarray  # normalised bytes
    starts: np.ndarray
    ends: np.ndarray
    keys: np.ndarray

    def text(self, index: int) -> str:
        """The normalised text of a word token (markers are not asked for)."""
        return self.c[self.starts[index] : self.ends[index]].tobytes().decode("utf-8", "replace")

    def join(self, index: np.ndarray) -> str:
        """The normalised texts of word tokens `index` joined by spaces (each token is
        whole UTF-8, so decoding the joined bytes equals joining decoded tokens)."""
        view = self.c.data
        return b" ".join([view[s:e] for s, e in zip(self.starts[index].tolist(), self.ends[index].tolist())]).decode(
            "utf-8", "replace"
        )

    def hashes(self, index: np.ndarray) -> np.ndarray:
        """`tokenise`'s hashes of word tokens `index`."""
        return token_hashes(self.c, self.starts[index], self.ends[index])

    def __len__(self) -> int:
        return len(self.starts)


def scan(text: str) -> Scan:
    """The tokens of `text` exactly as `tokenise` cuts them, keyed by `token_keys`.

    A ROW marker's key is 0 and a CLAUSE marker's is its byte (`.`, `?`, ...): no word
    token has those keys, since they are made of other bytes.
    """
    c, starts, ends, _, keys = _cut(text)
    return Scan(c, starts, ends, keys)


MARKER_KEYS = {ROW: (0,), CLAUSE: tuple(b".?!;:,)]}")}


def tokens(text: str) -> list[str]:
    """Normalised tokens of one text (CLAUSE markers included), as strings."""
    tok = tokenise(text.replace(ROW, " "))
    return [tok.text(i) for i in range(len(tok))]


def normalise(text: str) -> str:
    """The normalised words of `text` joined by single spaces (clause markers dropped)."""
    return " ".join(t for t in tokens(text) if t != CLAUSE)
