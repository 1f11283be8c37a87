"""The base of every payload model and the registry of kinds."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict

__all__ = ["PAYLOADS", "Payload", "Record", "dump_payload", "kind"]


class Record(BaseModel):
    """A nested record inside a payload: closed, frozen, like the payload itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Payload(Record):
    """The payload of one event kind. `KIND` names the kind; the ledger stores the fields a
    writer set (unset defaults stay absent, so that a payload's bytes are what was written)."""

    KIND: ClassVar[str] = ""

    @classmethod
    def from_older(cls, data: dict[str, Any], version: int) -> dict[str, Any]:
        """An older schema version's body in this model's form: by default the fields the model
        knows (v1 bodies were unvalidated). A model whose fields moved overrides this."""
        return {k: v for k, v in data.items() if k in cls.model_fields}


PAYLOADS: dict[str, type[Payload]] = {}

P = TypeVar("P", bound=type[Payload])


def kind(name: str) -> Any:
    """Class decorator: the payload model of event kind `name`."""

    def register(cls: P) -> P:
        if name in PAYLOADS:
            raise ValueError(f"event kind {name} has two payload models")
        cls.KIND = name
        PAYLOADS[name] = cls
        return cls

    return register


def dump_payload(payload: Record) -> dict[str, Any]:
    """The JSON content stored for a payload: the fields its writer set, as Python values
    (JSON mode would turn inf/NaN into null silently; the ledger refuses them instead)."""
    return payload.model_dump(mode="python", exclude_unset=True)
