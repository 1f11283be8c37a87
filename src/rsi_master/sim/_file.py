"""World files: the JSON of a SimWorld (`format` and `version` fields first)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from ._errors import WorldFileError
from ._flags import one_line
from ._world import FORMAT, SimWorld

__all__ = ["load_world", "loads_world", "save_world"]


def loads_world(text: str, where: str = "world") -> SimWorld:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise WorldFileError(f"{where}: not JSON ({exc.msg} at line {exc.lineno})") from None  # type: ignore[attr-defined]
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise WorldFileError(f'{where}: not a simulated world (no "format": "{FORMAT}")')
    if data.get("version") != 1:
        raise WorldFileError(f"{where}: format version {data.get('version')!r} unknown (this reads 1)")
    try:
        return SimWorld.model_validate(data)
    except ValidationError as exc:
        raise WorldFileError(f"{where}: {one_line(exc)}") from None
    except ValueError as exc:  # a consistency check in the simulator itself
        raise WorldFileError(f"{where}: {exc}") from None


def load_world(path: str | Path) -> SimWorld:
    """Read a world file; a one-line `WorldFileError` for anything that is not one."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorldFileError(f"{p}: cannot read ({type(exc).__name__}: {exc})".splitlines()[0]) from None
    return loads_world(text, str(p))


def save_world(land: SimWorld, path: str | Path) -> Path:
    p = Path(path)
    try:
        p.write_text(land.model_dump_json(indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise WorldFileError(f"{p}: cannot write ({type(exc).__name__}: {exc.strerror or exc})") from None
    return p
