"""Checks of a base model that must fail at contract freeze, before a run directory exists,
rather than inside the first Worker's training: weight files cut short or corrupt (a
safetensors header against the file's size, a pytorch zip's central directory), and a
tokenizer without a usable chat template when the task is in chat format.

Reading a safetensors header costs a few bytes, not the weights: the format is an 8-byte
little-endian header length, a JSON header whose tensors name their byte ranges, then the
data, so the file's size must be exactly where the last range ends.
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

from rsi_master.runtime._chat import chat_format
from rsi_master.runtime._errors import ModelInputError

__all__ = ["check_chat_template", "check_weight_file"]

# A header bigger than this is no header (safetensors itself caps it at 100 MB).
_MAX_HEADER = 100_000_000


def _safetensors_problem(path: Path) -> str | None:
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            return f"{size} bytes, too short for a safetensors header"
        (n,) = struct.unpack("<Q", head)
        if n > _MAX_HEADER or 8 + n > size:
            return f"{size} bytes, but its header claims {n} bytes of header"
        try:
            header = json.loads(f.read(n))
        except ValueError:
            return "its header is not JSON"
    if not isinstance(header, dict):
        return "its header is not a table of tensors"
    end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
            return f"tensor {name!r} has no byte range"
        end = max(end, offsets[1])
    expected = 8 + n + end
    if size != expected:
        return f"{size} bytes, but its header says {expected}: truncated or padded"
    return None


def _bin_problem(path: Path) -> str | None:
    if not zipfile.is_zipfile(path):
        with path.open("rb") as f:
            magic = f.read(2)
        # Legacy (pre-zip) torch pickles start with a pickle protocol opcode: not checked further.
        return None if magic[:1] == b"\x80" else "not a torch checkpoint (neither a zip nor a pickle)"
    try:
        with zipfile.ZipFile(path) as z:
            z.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        return f"its zip archive is damaged ({exc})"
    return None


def check_weight_file(path: Path, name: str) -> str | None:
    """What is wrong with one weight file (None when its structure is whole); `name` is the
    file's path inside the model, used in the message in place of where it was read."""
    try:
        if name.endswith(".safetensors"):
            problem = _safetensors_problem(path)
        elif name.endswith(".bin"):
            problem = _bin_problem(path)
        else:
            return None
    except OSError as exc:
        return f"weight file {name} cannot be read ({exc.strerror})"
    return None if problem is None else f"weight file {name} is damaged: {problem}"


def check_chat_template(model_dir: Path, model: str, task: str) -> None:
    """Refuse a model whose tokenizer cannot render the chat turns a chat-format task is
    evaluated in; `model` names it in the message (`model ID`, `the shipped model`), never
    by where it was read from."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise ModelInputError(f"{model}: tokenizer does not load: {type(exc).__name__}: {first}") from None
    if not getattr(tokenizer, "chat_template", None):
        raise ModelInputError(
            f"task {task} is in chat format but {model} has no chat template: give a model whose "
            "tokenizer has one (chat_template in tokenizer_config.json, or chat_template.jinja), or a "
            'task with format = "plain"'
        )
    try:
        chat_format(tokenizer)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise ModelInputError(
            f"task {task} is in chat format but the chat template of {model} does not render a turn: "
            f"{type(exc).__name__}: {first}"
        ) from None
