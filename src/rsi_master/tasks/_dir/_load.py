"""Reading a task directory: every file read once, hashed, parsed from the same bytes, checked.

Copy-then-hash-then-use: a task holds the bytes it parsed (`FileTask.files`), and everything
later (the seal, the contract's digests) is made from those bytes, never from a second read of
a directory an agent may be able to write.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ._config import PythonScorer, TaskConfig
from ._errors import TaskInputError

__all__ = ["MAX_FILE_BYTES", "parse_config", "parse_split", "read_file", "read_files"]

MAX_FILE_BYTES = 512 * 1024 * 1024
TOML = "task.toml"


def read_file(root: Path, rel: str) -> bytes:
    """One file of the task directory, read once (a regular file, no link, at most MAX_FILE_BYTES)."""
    path = root / rel
    try:
        # Links are refused: a link would make the task's bytes depend on a file outside it.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise TaskInputError(f"{root}: no {rel}") from None
    except OSError as exc:
        raise TaskInputError(f"{path}: cannot read ({exc.strerror or exc}; links are refused)") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise TaskInputError(f"{path}: not a regular file")
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise TaskInputError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB")
    return data


def _pydantic_message(exc: ValidationError) -> str:
    err = exc.errors()[0]
    # A scorer's location carries the union's tag (`scorer.numeric.x`); the user wrote `scorer.x`.
    where = ".".join(str(p) for i, p in enumerate(err["loc"]) if not (i == 1 and err["loc"][0] == "scorer"))
    where = where or "(top level)"
    if err["type"] == "extra_forbidden":
        return f"unknown field {where!r}"
    if err["type"] == "missing":
        return f"missing field {where!r}"
    return f"{where}: {err['msg']}"


def parse_config(root: Path, data: bytes) -> TaskConfig:
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TaskInputError(f"{root / TOML}: not TOML ({exc})") from None
    try:
        return TaskConfig.model_validate(raw)
    except ValidationError as exc:
        raise TaskInputError(f"{root / TOML}: {_pydantic_message(exc)}") from None


def read_files(root: str | Path) -> tuple[TaskConfig, dict[str, bytes]]:
    """The config and the bytes of every file the task names (relative path -> bytes)."""
    root = Path(root)
    if not root.is_dir():
        raise TaskInputError(f"{root}: not a task directory (no such directory)")
    files = {TOML: read_file(root, TOML)}
    config = parse_config(root, files[TOML])
    s = config.splits
    if s.train is None and (root / "train.jsonl").is_file():
        # Without the key the pool is not part of the task: a run would have nothing to train on.
        raise TaskInputError(
            f"{root / TOML}: train.jsonl is there but no [splits] train names it "
            '(add `train = "train.jsonl"` under [splits], or remove the file)'
        )
    for rel in (s.dev, s.review, s.final, s.train):
        if rel is not None:
            files[rel] = read_file(root, rel)
    if isinstance(config.scorer, PythonScorer):
        if config.scorer.path in files:
            raise TaskInputError(f"{root / TOML}: the scorer file cannot also be a split")
        files[config.scorer.path] = read_file(root, config.scorer.path)
    return config, files


def parse_split(label: str, data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(id, fields without id) per line of a JSONL split; ids unique within the file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TaskInputError(f"{label}: not UTF-8") from None
    out: list[tuple[str, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskInputError(f"{label} line {n}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise TaskInputError(f"{label} line {n}: not a JSON object")
        item_id = row.pop("id", None)
        if isinstance(item_id, bool) or not isinstance(item_id, (str, int)) or str(item_id).strip() == "":
            raise TaskInputError(f"{label} line {n}: needs an 'id' (text or integer)")
        item_id = str(item_id)
        if item_id in seen:
            raise TaskInputError(f"{label} line {n}: duplicate id {item_id!r} (first on line {seen[item_id]})")
        seen[item_id] = n
        out.append((item_id, row))
    if not out:
        raise TaskInputError(f"{label}: no items")
    return out


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def files_digest(files: dict[str, str]) -> str:
    """The manifest digest of a task's files (the artifact store's rule: sorted `path\\tsha256` lines)."""
    return sha256("".join(f"{rel}\t{digest}\n" for rel, digest in sorted(files.items())).encode("utf-8"))
