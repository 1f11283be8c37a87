"""Typed views of ledger events, and the checks writers go through.

The discriminated union is on the event, not inside the payload: a payload may itself have
a field named `kind` (`tool.call`, `orchestra.job.start`, `agent.error`), so each kind's
event model has `kind: Literal[...]` and `payload: <the kind's model>`.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Annotated, Any, Generic, Literal, TypeVar, Union, overload

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from ..errors import MalformedEventError
from ..ledger import Actor, ArtifactRef, Event
from ._base import PAYLOADS, Payload

__all__ = [
    "SCHEMA_VERSION",
    "TypedEvent",
    "UnknownEventKind",
    "event_adapter",
    "payload_model",
    "payload_of",
    "typed",
    "validate_payload",
    "with_payload",
]

SCHEMA_VERSION = 3
"""Event schema version the ledger writes (ledger.EVENT_SCHEMA_VERSION). v2: every payload is
its kind's model, validated before it is written. v3: a decision names the event it answers
in a field of its own (`DecisionRecord.answers`, before: `detail["event"]`). Older bodies are
read through the same models, each model bringing an older body to its own form
(`Payload.from_older`): by default a field the model does not know is left out of the typed
view (it stays in the stored bytes and their hash); a missing required field is an error
naming the event."""

P = TypeVar("P", bound=Payload)


class UnknownEventKind(MalformedEventError):
    """An event kind no payload model describes."""


class TypedEvent(BaseModel, Generic[P]):
    """A ledger event whose payload is its kind's model (attribute access). `TypedEvent[Model]`
    types the payload for a reader that knows the kind (`typed(event, Model)`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = Field(description="Event kind, dotted, e.g. `data.generate`.")
    actor: Actor
    payload: P = Field(description="The kind's payload model.")
    artifacts: tuple[ArtifactRef, ...] = Field(default=(), description="Artifacts read or written.")
    version: int = Field(description="Event schema version the body was written with.")
    seq: int = Field(ge=0, description="Position in the ledger, from 0.")
    ts: str = Field(description="UTC time of sealing, RFC 3339.")
    prev_hash: str = Field(description="Hash of the event at seq-1.")
    hash: str = Field(description="SHA-256 of the canonical body.")


def payload_model(kind: str) -> type[Payload]:
    """The payload model of an event kind; UnknownEventKind for a kind none describes."""
    try:
        return PAYLOADS[kind]
    except KeyError:
        raise UnknownEventKind(f"unknown event kind {kind!r}") from None


def _variant(kind: str, model: type[Payload]) -> type[TypedEvent]:
    name = "".join(part.capitalize() for part in kind.replace("_", ".").split(".")) + "Event"
    # The generic's argument and the Literal are values known at run time only, so they are Any to mypy.
    base: Any = TypedEvent[model]  # type: ignore[valid-type]
    kind_type: Any = Literal[kind]
    return create_model(name, __base__=base, __doc__=model.__doc__, kind=(kind_type, Field(description="Event kind.")))


@lru_cache(maxsize=1)
def event_adapter() -> TypeAdapter[Any]:
    """The discriminated union of every kind's typed event (for validation and JSON Schema)."""
    variants = tuple(_variant(k, m) for k, m in sorted(PAYLOADS.items()))
    # A Union of a run-time tuple has no `X | Y` spelling; built at run time, so Any to mypy.
    union: Any = Annotated[Union[variants], Field(discriminator="kind")]  # noqa: UP007
    return TypeAdapter(union)


@cache
def _variants() -> dict[str, type[TypedEvent]]:
    return {k: _variant(k, m) for k, m in PAYLOADS.items()}


def _error(where: str, exc: ValidationError) -> MalformedEventError:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "payload"
    return MalformedEventError(f"{where}: payload.{loc}: {first['msg']}")


def validate_payload(kind: str, payload: Payload | dict[str, Any]) -> Payload:
    """The kind's model of a payload (a model is checked to be of the kind): what a writer hands on."""
    model = payload_model(kind)
    if isinstance(payload, Payload):
        if not isinstance(payload, model):
            raise MalformedEventError(f"{kind} takes a {model.__name__} payload, not a {type(payload).__name__}")
        return payload
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise _error(f"malformed {kind} event", exc) from None


def _read_payload(event: Event, model: type[P]) -> P:
    data = event.payload
    if event.version < SCHEMA_VERSION:
        data = model.from_older(data, event.version)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _error(f"event {event.seq} ({event.kind}, schema v{event.version})", exc) from None


@overload
def typed(event: Event) -> TypedEvent[Any]: ...
@overload
def typed(event: Event, model: type[P]) -> TypedEvent[P]: ...
def typed(event: Event, model: type[Payload] | None = None) -> TypedEvent[Any]:
    """The typed view of a ledger event: `.payload` is its kind's model. With `model`, the
    event must be of that model's kind, and the view is typed as `TypedEvent[model]`."""
    if model is not None and event.kind != model.KIND:
        raise MalformedEventError(f"event {event.seq} is {event.kind}, not {model.KIND}")
    return with_payload(event, _read_payload(event, payload_model(event.kind)))


def with_payload(event: Event, payload: P) -> TypedEvent[P]:
    """The typed view of `event` whose payload a reader already read with `payload_of`: a reader
    that reads every event's payload but keeps only some events types those, without reading
    their payloads again."""
    return _variants()[event.kind].model_construct(
        kind=event.kind,
        actor=event.actor,
        payload=payload,
        artifacts=tuple(event.artifacts),
        version=event.version,
        seq=event.seq,
        ts=event.ts,
        prev_hash=event.prev_hash,
        hash=event.hash,
    )


def payload_of(event: Event, model: type[P]) -> P:
    """The payload of an event known to be of `model`'s kind, typed as that model."""
    if event.kind != model.KIND:
        raise MalformedEventError(f"event {event.seq} is {event.kind}, not {model.KIND}")
    return _read_payload(event, model)
