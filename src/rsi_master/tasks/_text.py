"""Text helpers shared by all tasks: normalisation, stop handling, final-line rule.

Every checker reads the *last line* of the output before the first stop string. One
rule for all tasks keeps the evaluator simple to audit and lets a family put working
(scratchpads, quoted facts, plans) on earlier lines without the checker guessing.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_OUTPUT_CHARS", "cut_at_stop", "derive_seed", "final_line", "is_plain_ascii", "normalise"]

MAX_OUTPUT_CHARS = 4_000  # far above any max_new_tokens; bounds checker work on huge outputs

_SPACE = re.compile(r"\s+")
_PLAIN = re.compile(r"[\x20-\x7e\n]*")


def normalise(text: str) -> str:
    """Case- and whitespace-insensitive form used for sealing and overlap checks."""
    return _SPACE.sub(" ", text).strip().lower()


def derive_seed(*parts: object) -> int:
    """A 64-bit seed from labelled parts; stable across processes and Python versions.

    `hash()` is salted per process, so it must never feed an evaluation set.
    """
    data = "\x1f".join(str(part) for part in parts).encode("utf-8")
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def cut_at_stop(output: str, stop: tuple[str, ...]) -> str:
    """The output up to (not including) the earliest stop string, length-capped."""
    output = output[: MAX_OUTPUT_CHARS * 2]
    end = len(output)
    for marker in stop:
        if marker:
            index = output.find(marker)
            if index != -1:
                end = min(end, index)
    return output[:end][:MAX_OUTPUT_CHARS]


def final_line(output: str, stop: tuple[str, ...]) -> str:
    """The last non-empty line before the stop string, stripped ('' when none)."""
    lines = [line.strip() for line in cut_at_stop(output, stop).split("\n")]
    lines = [line for line in lines if line]
    return lines[-1] if lines else ""


def is_plain_ascii(text: str) -> bool:
    """True when `text` uses only printable ASCII and newlines (the tokenizer's alphabet)."""
    return _PLAIN.fullmatch(text) is not None
