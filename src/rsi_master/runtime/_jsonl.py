"""Deterministic JSONL reading and writing for datasets."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# One encoder for every row (`json.dumps` with options builds a new one per call).
_ENCODE = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write rows with sorted keys (same rows, same bytes, same digest); atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(_ENCODE(row) + "\n")
            n += 1
    os.replace(tmp, path)
    return n


def jsonl_bytes(rows: Iterable[dict[str, Any]]) -> bytes:
    """The bytes `write_jsonl` writes for `rows`, without a file."""
    return "".join([_ENCODE(row) + "\n" for row in rows]).encode("utf-8")


def parse_jsonl(data: bytes, where: str | Path) -> list[dict[str, Any]]:
    """Rows of JSONL bytes (blank lines skipped); ValueError naming `where` and the line.

    Lines end at "\n" only (a "\r" before it is JSON whitespace): `str.splitlines` also
    splits at U+2028, U+0085 and other characters a JSON string may hold raw, as the
    writer above writes them (`ensure_ascii=False`), which cut such a row in two."""
    rows = []
    for lineno, line in enumerate(data.decode("utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}:{lineno}: not valid JSON: {exc.msg}") from None
    return rows


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    return parse_jsonl(Path(path).read_bytes(), path)
