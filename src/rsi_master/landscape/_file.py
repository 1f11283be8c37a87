"""Reading and writing the landscape file.

The shipped file is `landscape.json` beside this module; `RSI_MASTER_LANDSCAPE` names
another (a landscape measured for one's own tasks or machine), and the Main reads whichever
is in force when it plans. A file of format version 1 (the first, written by the script that
`rsi-master landscape measure` replaced) is read too: it differs only in where the targets sit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import RsiMasterError
from ._label import LabelError
from ._model import FORMAT_VERSION, Landscape

__all__ = ["ENV_VAR", "SHIPPED", "LandscapeError", "dumps", "landscape_path", "load", "loads", "save"]

SHIPPED = Path(__file__).with_name("landscape.json")
ENV_VAR = "RSI_MASTER_LANDSCAPE"
_cache: dict[Path, tuple[tuple[int, int], Landscape]] = {}


class LandscapeError(RsiMasterError):
    """A landscape file that cannot be read as one (the message says where and why)."""


def landscape_path() -> Path:
    """The landscape file in force: `$RSI_MASTER_LANDSCAPE`, else the shipped one."""
    return Path(os.environ[ENV_VAR]) if os.environ.get(ENV_VAR) else SHIPPED


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 record as version 2: its targets kept the per-task entries beside the
    two overall ones, and a target with no crossing wrote it as null."""
    data = dict(data)
    targets = data.get("targets")
    if isinstance(targets, dict):
        overall = {k: targets[k] for k in ("crossing_tasks", "crossing_ok") if k in targets}
        per_task = {
            k: {f: v for f, v in t.items() if v is not None}
            for k, t in targets.items()
            if k not in overall and isinstance(t, dict)
        }
        data["targets"] = {"tasks": per_task, **overall}
    data["version"] = 2
    return data


def _validated(data: Any, where: str) -> Landscape:
    try:
        return Landscape.model_validate(data)
    except (ValidationError, LabelError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        msg = f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}" if first else str(exc)
        raise LandscapeError(f"{where}: {msg}") from None


def loads(text: str, where: str = "landscape") -> Landscape:
    """A landscape from its JSON text; `LandscapeError` naming `where` and the first fault."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LandscapeError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise LandscapeError(f"{where}: a landscape is a JSON object")
    version = data.get("version")
    if version == 1:
        data = _upgrade(data)
    elif version != FORMAT_VERSION:
        raise LandscapeError(
            f"{where}: format version {version!r} is not one this rsi-master reads (1 or {FORMAT_VERSION})"
        )
    return _validated(data, where)


def load(path: str | Path | None = None) -> Landscape:
    """The landscape at `path` (default: `landscape_path()`); an empty one where no file was
    written yet. Read again only when the file changes."""
    p = Path(path) if path is not None else landscape_path()
    try:
        st = p.stat()
    except FileNotFoundError:
        if path is not None or p != SHIPPED:
            raise LandscapeError(f"{p}: no such landscape file") from None
        return Landscape()
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _cache.get(p)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    landscape = loads(p.read_text(), str(p))
    _cache[p] = (stamp, landscape)
    return landscape


def dumps(landscape: Landscape) -> str:
    return json.dumps(landscape.model_dump(mode="json", exclude_none=True), indent=2, sort_keys=True) + "\n"


def save(landscape: Landscape, path: str | Path | None = None) -> Path:
    """Write `landscape` (validated again first, so that no file is written that `load`
    would refuse) to `path` (default: `landscape_path()`)."""
    p = Path(path) if path is not None else landscape_path()
    text = dumps(_validated(landscape.model_dump(), str(p)))
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(p)
    return p
