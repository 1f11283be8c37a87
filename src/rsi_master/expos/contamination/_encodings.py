"""Reversible encodings of a training row, undone before matching.

A row is checked as written, and again in each reading below that applies to it; every
reading is checked in one stream of readings, each kept apart from the next (`_check`), and
a match in it is the original row's, naming the reading.

- **base64, hex, URL-encoding**: a row holding a run of one (a regular expression finds it;
  clean rows hold none to speak of) is read with the runs decoded, when they decode to text.
- **rot13, reversed by characters**: a row whose words are mostly unknown to the protected
  vocabulary (the check counts them per row, for free) is read rot13-decoded and reversed.
  Clean rows use the tasks' words, so they are rarely read again.
- **reversed by words, two texts interleaved word by word**: nothing in a row gives these
  away, so every row long enough to hold a failing run is read reversed, and as its even
  and its odd words. Clean rows read this way share short runs with protected texts by
  chance (a program's reversed list), so only a failing match counts in these readings.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from urllib.parse import unquote_plus

__all__ = ["FAIL_ONLY", "chunk_readings", "decoded_readings", "reversed_words", "rot13", "word_readings"]

# Readings every long row gets, where only a failing match is evidence.
FAIL_ONLY = frozenset({"reversed", "reversed_words", "interleaved"})


def rot13(text: str) -> str:
    return codecs.encode(text, "rot13")


def reversed_words(text: str) -> str:
    return " ".join(text.split()[::-1])


# Runs long enough to hold a few words once decoded (12 bytes of base64, 8 of hex).
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX = re.compile(r"(?:0x)?((?:[0-9A-Fa-f]{2}){8,})")
# Base64 of a dozen bytes of text or more holds a digit, an upper and a lower case letter (all
# but a few in a thousand of an item's length); a hyphenated word does not, and is not tried.
_MIXED = (re.compile(r"[0-9]"), re.compile(r"[A-Z]"), re.compile(r"[a-z]"))
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
# A decoding is kept when it reads as text: printable, with letters in it.
_PRINTABLE = 0.9


def _text(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    shown = sum(c.isprintable() or c in "\n\t" for c in text)
    if not text or shown < _PRINTABLE * len(text) or not any(c.isalpha() for c in text):
        return None
    return text


def _b64(run: str) -> str | None:
    if not all(p.search(run) for p in _MIXED):
        return None
    body = run.rstrip("=")
    try:
        data = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_" if "-" in run or "_" in run else None)
    except (binascii.Error, ValueError):
        return None
    return _text(data)


def _hex(run: str) -> str | None:
    try:
        return _text(bytes.fromhex(run))
    except ValueError:
        return None


def _replace(text: str, pattern: re.Pattern[str], decode: Callable[[str], str | None], group: int) -> str | None:
    changed = False

    def sub(m: re.Match[str]) -> str:
        nonlocal changed
        got = decode(m.group(group))
        if got is None:
            return m.group(0)
        changed = True
        return f" {got} "

    out = pattern.sub(sub, text)
    return out if changed else None


def decoded_readings(text: str) -> list[tuple[str, str]]:
    """(encoding, the row with its runs decoded) for each row-side encoding the row holds."""
    out = []
    if "%" in text and _PERCENT.search(text):
        out.append(("url", unquote_plus(text)))
    if len(text) >= 16:
        for name, pattern, decode, group in (("base64", _BASE64, _b64, 0), ("hex", _HEX, _hex, 1)):
            got = _replace(text, pattern, decode, group)
            if got is not None:
                out.append((name, got))
    return out


def word_readings(text: str, min_words: int) -> list[tuple[str, str]]:
    """The row reversed by characters and by words (when it has `min_words`), and its even and
    its odd words (when each has `min_words`). Words are what white space separates (a list
    without spaces is one), the unit an agent reorders."""
    words = text.split()
    out = []
    if len(words) >= min_words:
        out += [("reversed", text[::-1]), ("reversed_words", " ".join(words[::-1]))]
    if len(words) >= 2 * min_words:
        out += [("interleaved", " ".join(words[0::2])), ("interleaved", " ".join(words[1::2]))]
    return out


_ANY = re.compile(r"%[0-9A-Fa-f]{2}|[A-Za-z0-9+/_-]{16}")


def chunk_readings(texts: list[str]) -> list[tuple[int, str, str]]:
    """(index in `texts`, encoding, decoded row) for the rows of a chunk: one scan of the
    joined chunk finds the few rows with a run to decode; only those are read again."""
    joined = "\n".join(texts)
    ends = list(accumulate(len(t) + 1 for t in texts))
    rows = sorted({bisect_right(ends, m.start()) for m in _ANY.finditer(joined)})
    return [(k, name, text) for k in rows for name, text in decoded_readings(texts[k])]
