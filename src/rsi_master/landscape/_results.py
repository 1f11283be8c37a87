"""The raw measurements: one JSON line per finished measurement (a base score, a curve run,
a probe, a reference), appended as each one ends so that a measurement can be stopped and
resumed; the landscape file is built from them (`build`), never edited.

Rows keep whatever else their measurement recorded (notes, a rescoring's date, the stages
of a continued reference): only the fields the landscape is built from are typed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ._file import LandscapeError

__all__ = [
    "BaseRow",
    "CurveRow",
    "ProbeRow",
    "ReferenceRow",
    "Row",
    "RowPoint",
    "append_row",
    "read_rows",
    "row_dict",
    "write_rows",
]


class _Row(BaseModel):
    model_config = ConfigDict(extra="allow")

    key: str
    task: str


class BaseRow(_Row):
    kind: Literal["base"]
    split: str
    score: float
    checkpoint_digest: str | None = None


class RowPoint(BaseModel):
    model_config = ConfigDict(extra="allow")

    multiple: float
    score: float
    step: int | None = None
    examples: int | None = None


class CurveRow(_Row):
    kind: Literal["curve"]
    family: str
    label: str | None = None  # the first curves were keyed by their family alone
    seed: int = 0
    params: dict[str, Any] = Field(default_factory=dict)
    spec: dict[str, Any] = Field(default_factory=dict)
    points: list[RowPoint]
    train_seconds: float | None = None
    tokens: int | None = None

    @property
    def curve(self) -> str:
        return self.label or self.family


class ProbeRow(_Row):
    kind: Literal["probe"]
    family: str
    spec: dict[str, Any]
    examples: int
    multiple: float | None = None
    steps: int | None = None
    train_seconds: float | None = None
    tokens: int | None = None
    score: float
    parent: str | None = None


class ReferenceRow(_Row):
    kind: Literal["reference"]
    family: str
    spec: dict[str, Any]
    examples: int
    steps: int | None = None
    train_seconds: float | None = None
    scores: dict[str, float]
    checkpoint_digest: str | None = None


Row = Annotated[BaseRow | CurveRow | ProbeRow | ReferenceRow, Field(discriminator="kind")]
_ROW: TypeAdapter[Row] = TypeAdapter(Row)


def read_rows(path: Path) -> list[Row]:
    """Every row of a results file (none where there is no file yet)."""
    if not path.is_file():
        return []
    rows: list[Row] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            rows.append(_ROW.validate_json(line))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise LandscapeError(f"{path}:{n}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    return rows


def row_dict(row: Row) -> dict[str, Any]:
    """The row as written: its own fields and whatever else its measurement recorded."""
    return row.model_dump(mode="json", exclude_unset=True)


def append_row(path: Path, row: dict[str, Any]) -> Row:
    """Validate and append one row (one line, so that parallel measurers may share the file)."""
    typed = _ROW.validate_python(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(row_dict(typed), sort_keys=True) + "\n")
    return typed


def write_rows(path: Path, rows: list[Row]) -> None:
    """Rewrite the whole file (a rescoring): run it while nothing else appends to it."""
    path.write_text("".join(json.dumps(row_dict(r), sort_keys=True) + "\n" for r in rows))
