"""Length bounds on what an agent may write into a tool call, so that the ledger grows by
what a call means, not by what a caller pads it with.

Every free-text field of a tool input (and of the typed messages tool inputs carry) uses one
of the types below; `docs/expos.md` lists them. The request cap of the door (4 MB a line)
bounds a single call; these bound each field, and the per-capability write quota bounds the
sum. Old events are read with the same models, so a limit is only ever raised, never lowered
below what a harness of this version wrote.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import AfterValidator, Field

__all__ = [
    "ID_MAX",
    "LIST_MAX",
    "OBJECT_MAX",
    "PATH_MAX",
    "SUMMARY_MAX",
    "TEXT_LIST_MAX",
    "TEXT_MAX",
    "JsonObject",
    "Name",
    "PathText",
    "Text",
]

# A rationale, question, claim, reason or review entry: a long paragraph, not a document.
TEXT_MAX = 4096
# A Worker's final summary: the one place an agent writes up a whole direction.
SUMMARY_MAX = 20_000
# An id, a digest, a family, method or source name.
ID_MAX = 128
# A filesystem path an agent names (a checkpoint to register).
PATH_MAX = 4096
# Entries of a list of ids, seqs, claims or findings in one call.
LIST_MAX = 256
# Entries of a list of free-text items (a review's supported, uncertainties, ...).
TEXT_LIST_MAX = 64
# Canonical JSON bytes of a free-form object (generator knobs, training config, direction, detail).
OBJECT_MAX = 16_384


def _bounded_object(value: dict[str, Any]) -> dict[str, Any]:
    size = len(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode("utf-8"))
    if size > OBJECT_MAX:
        raise ValueError(f"object of {size} bytes as JSON; at most {OBJECT_MAX}")
    return value


Text = Annotated[str, Field(max_length=TEXT_MAX)]
Name = Annotated[str, Field(max_length=ID_MAX)]
PathText = Annotated[str, Field(max_length=PATH_MAX)]
JsonObject = Annotated[
    dict[str, Any],
    AfterValidator(_bounded_object),
    Field(json_schema_extra={"maxBytes": OBJECT_MAX}),
]
