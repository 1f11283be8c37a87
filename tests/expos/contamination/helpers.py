"""Shared helpers: per-task indexes, clean generated rows, and the disguises an agent
would apply to an evaluation item before slipping it into training data."""

from __future__ import annotations

import itertools
import random
import re
from functools import cache

from rsi_master.expos.contamination import ContaminationIndex, build_index, protected_items
from rsi_master.tasks import get_task, list_tasks

TASKS = tuple(list_tasks())


@cache
def task_index(name: str) -> ContaminationIndex:
    """The default index of one task (dev, review and final items), built once per session."""
    return build_index(protected_items(get_task(name)))


def clean_rows(name: str, n_per_family: int, seed: int = 11) -> list[dict]:
    """Rows from every generator family of a task (they never contain a sealed item)."""
    rows: list[dict] = []
    for family in get_task(name).generators().values():
        rows += family.generate(None, seed, n_per_family)
    return rows


def spaces(text: str, rng: random.Random) -> str:
    """Whitespace changes: doubled spaces, tabs, line breaks between words."""
    return re.sub(r" ", lambda _: rng.choice(["  ", "\t", " \n ", "   "]), text)


def case(text: str, rng: random.Random) -> str:
    return text.upper() if rng.random() < 0.5 else text.swapcase()


def numbers(text: str, rng: random.Random) -> str:
    """Number formatting: `31` -> `31.0` or `031`; thousands get a separator."""

    def one(m: re.Match[str]) -> str:
        value = int(m.group())
        if value >= 1000:
            return f"{value:,}"
        return rng.choice([f"{value}.0", f"0{value}", f"00{value}", f"{value}.00"])

    return re.sub(r"(?<![\d.])\d+(?![\d.])", one, text)


def reorder(name: str, prompt: str) -> str:
    """Reordered clauses: the natural unit of each task moved around, nothing reworded."""
    if name == "arithmetic":  # move the first sentence after the second
        head, body = prompt.split(": ", 1)
        sentences = re.split(r"(?<=[.?]) ", body.split("\n")[0])
        sentences[0], sentences[1] = sentences[1], sentences[0]
        return f"{head}: {' '.join(sentences)}\n" + "\n".join(body.split("\n")[1:])
    if name == "knowledge":  # facts in reverse order
        lines = prompt.split("\n")
        facts = lines[0].removeprefix("Facts: ").rstrip(".").split(". ")
        return "\n".join(["Facts: " + ". ".join(reversed(facts)) + ".", *lines[1:]])
    if name == "function_calling":  # request first, functions reversed
        lines = prompt.split("\n")
        functions = lines[0].removeprefix("Functions: ").split(" ")
        return "\n".join([lines[1], "Functions: " + " ".join(reversed(functions)), *lines[2:]])
    if name == "program_synthesis":  # examples in reverse order
        lines = prompt.split("\n")
        return "\n".join([lines[0], *reversed(lines[1:-1]), lines[-1]])
    raise ValueError(name)


def embed(name: str, text: str, seed: int) -> str:
    """`text` between two normal generated examples of the same task, as one row."""
    before, after = get_task(name).generator(next(iter(get_task(name).generators()))).generate(None, seed, 2)
    return f"{before['prompt']}{before['completion']}{text}\n\n{after['prompt']}{after['completion']}"


# -- disguises by the meaning of characters (docs/contamination.md, Normalisation) ----------
# Latin letters and the Cyrillic or Greek letters drawn the same in common fonts.
LOOK_ALIKES = {
    "a": "а",
    "c": "с",
    "e": "е",
    "i": "і",
    "j": "ј",
    "o": "оο",
    "p": "р",
    "s": "ѕ",
    "x": "х",
    "y": "у",
    "A": "АΑ",
    "B": "ВΒ",
    "C": "С",
    "E": "ЕΕ",
    "H": "НΗ",
    "I": "ІΙ",
    "K": "КΚ",
    "M": "МΜ",
    "N": "Ν",
    "O": "ОΟ",
    "P": "РΡ",
    "S": "Ѕ",
    "T": "ТΤ",
    "X": "ХΧ",
    "Y": "ΥҮ",
    "Z": "Ζ",
}
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u00ad", "\u2060", "\ufeff", "\u034f", "\ufe0f", "\u180e", "\U000e0041"]
DIGITS = {
    "arabic-indic": 0x0660,
    "persian": 0x06F0,
    "devanagari": 0x0966,
    "bengali": 0x09E6,
    "thai": 0x0E50,
    "fullwidth": 0xFF10,
}


def look_alikes(text: str, rng: random.Random, share: float = 0.7) -> str:
    """Latin letters replaced by Cyrillic or Greek look-alikes."""
    return "".join(rng.choice(LOOK_ALIKES[ch]) if ch in LOOK_ALIKES and rng.random() < share else ch for ch in text)


# Lisu capitals: caseless letters drawn as Latin capitals (`ꓲ` for `I` reads `l` first).
LISU = dict(zip("ABCDEFGHIJKLMNOPRSTUVWXYZ", "ꓮꓐꓚꓓꓰꓝꓖꓧꓲꓙꓗꓡꓟꓠꓳꓑꓣꓢꓔꓴꓦꓪꓫꓬꓜ"))


def lisu(text: str) -> str:
    """The text in capitals, written with Lisu look-alikes."""
    return "".join(LISU.get(ch, ch) for ch in text.upper())


def fullwidth(text: str) -> str:
    """Every printable ASCII character in its fullwidth form, spaces as ideographic spaces."""
    return "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else "\u3000" if ch == " " else ch for ch in text)


def invisible(text: str, rng: random.Random, share: float = 0.5) -> str:
    """Zero-width spaces and joiners, soft hyphens, word joiners, variation selectors
    and tag characters inside words."""
    out = []
    for ch, nxt in zip(text, text[1:] + " "):
        out.append(ch)
        if ch.isalnum() and nxt.isalnum() and rng.random() < share:
            out.append(rng.choice(INVISIBLE))
    return "".join(out)


def invisible_spaces(text: str, rng: random.Random) -> str:
    """Every space replaced by an invisible character (the words then look glued together)."""
    return re.sub(" ", lambda _: rng.choice(INVISIBLE), text)


def digits(text: str, script: str) -> str:
    """ASCII digits written in the digits of another script."""
    zero = DIGITS[script]
    return "".join(chr(zero + int(ch)) if ch.isdigit() else ch for ch in text)


def number_words(text: str, rng: random.Random) -> str:
    """Every whole number spelled out in English (num2words: `116` -> `one hundred and
    sixteen`), in a random case; decimals (`68.0`) are left in digits."""
    from num2words import num2words

    def spell(m: re.Match[str]) -> str:
        words = num2words(int(m.group()))
        return rng.choice([words, words.upper(), words.title(), words.replace("-", " ")])

    return re.sub(r"(?<![\d.])\d+(?![\d.])", spell, text)


def split_rows(text: str, pieces: int) -> list[str]:
    """`text` cut at white space into `pieces` consecutive rows, as evenly as possible
    by words (each piece keeps the white space that follows it)."""
    words = re.split(r"(?<=\s)(?=\S)", text)
    bounds = [round(k * len(words) / pieces) for k in range(pieces + 1)]
    return ["".join(words[lo:hi]) for lo, hi in itertools.pairwise(bounds)]


# -- what a character reading must see (docs/contamination.md, "The character reading") --------
def rn_for_m(text: str) -> str:
    """Every `m` written `rn` (and `M` as `RN`): ASCII that reads the same."""
    return text.replace("m", "rn").replace("M", "RN")


def ascii_look_alikes(text: str) -> str:
    """`0` for `O`, `1` for `l`, `l` for `I`, `|` for `l` after a digit: ASCII for ASCII."""
    return re.sub(r"(?<=\d)l", "|", text.replace("O", "0").replace("l", "1").replace("I", "l"))


def cyrillic_zero(text: str) -> str:
    """Every digit `0` written as the Cyrillic capital `О` (a letter, not a digit)."""
    return text.replace("0", "\u041e")


def invisible_everywhere(text: str, rng: random.Random) -> str:
    """Invisible characters both inside words and in place of every space, in one text."""
    return invisible_spaces(invisible(text, rng, share=0.6), rng)


def cut_mid_word(text: str, pieces: int) -> list[str]:
    """`text` cut into `pieces` parts at positions inside words (never at white space)."""
    inside = [i for i in range(1, len(text)) if text[i - 1].isalnum() and text[i].isalnum()]
    marks = [inside[round(k * (len(inside) - 1) / pieces)] for k in range(1, pieces)]
    return [text[a:b] for a, b in zip([0, *marks], [*marks, len(text)])]
