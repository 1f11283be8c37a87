"""Landscape files: the JSON of a SimLandscape (`format` and `version` fields first)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from ._errors import LandscapeFileError
from ._flags import one_line
from ._landscape import FORMAT, SimLandscape

__all__ = ["load_landscape", "loads_landscape", "save_landscape"]


def loads_landscape(text: str, where: str = "landscape") -> SimLandscape:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise LandscapeFileError(f"{where}: not JSON ({exc.msg} at line {exc.lineno})") from None  # type: ignore[attr-defined]
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise LandscapeFileError(f'{where}: not a simulated landscape (no "format": "{FORMAT}")')
    if data.get("version") != 1:
        raise LandscapeFileError(f"{where}: format version {data.get('version')!r} unknown (this reads 1)")
    try:
        return SimLandscape.model_validate(data)
    except ValidationError as exc:
        raise LandscapeFileError(f"{where}: {one_line(exc)}") from None
    except ValueError as exc:  # a consistency check in the simulator itself
        raise LandscapeFileError(f"{where}: {exc}") from None


def load_landscape(path: str | Path) -> SimLandscape:
    """Read a landscape file; a one-line `LandscapeFileError` for anything that is not one."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LandscapeFileError(f"{p}: cannot read ({type(exc).__name__}: {exc})".splitlines()[0]) from None
    return loads_landscape(text, str(p))


def save_landscape(land: SimLandscape, path: str | Path) -> Path:
    p = Path(path)
    try:
        p.write_text(land.model_dump_json(indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise LandscapeFileError(f"{p}: cannot write ({type(exc).__name__}: {exc.strerror or exc})") from None
    return p
