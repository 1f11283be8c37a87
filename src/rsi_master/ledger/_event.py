"""Typed ledger events.

A producer hands the ledger an `EventDraft` (what happened, who did it, which artifacts
it touched). The ledger assigns the sequence number, timestamp and previous hash, and
seals it into an `Event` whose hash is SHA-256 over the RFC 8785 bytes of every field but
the hash itself.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import MalformedEventError
from ._canonical import canonical_bytes, sha256_hex

__all__ = [
    "EVENT_SCHEMA_VERSION",
    "GENESIS_HASH",
    "Actor",
    "ArtifactRef",
    "Event",
    "EventDraft",
    "SealedBody",
    "parse_body",
    "seal",
    "validate_draft",
]

EVENT_SCHEMA_VERSION = 3  # v3: a decision's answered event is a field; v1/v2 bodies still read (rsi_master.events)
GENESIS_HASH = "0" * 64
_HEX64 = r"^[0-9a-f]{64}$"
_NAME = r"^[a-z][a-z0-9_.\-]{0,63}$"


class Actor(BaseModel):
    """Who caused an event."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str = Field(pattern=_NAME, description="Role: harness, operator, main, worker, reviewer, public.")
    id: str = Field(min_length=1, max_length=128, description="Identity within the role, e.g. `worker-3`.")
    cap: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{16}$",
        description="Id of the capability the caller acted with (absent for the harness's own "
        "records and for runs made before capabilities).",
    )


class ArtifactRef(BaseModel):
    """A reference from an event to an artifact in the content-addressed store."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    digest: str = Field(pattern=_HEX64, description="SHA-256 hex of the artifact (a directory: of its manifest).")
    role: Literal["input", "output"] = Field(description="Whether the event consumed or produced it.")
    name: str = Field(default="", max_length=128, description="What the artifact is to this event, e.g. `dataset`.")


class EventDraft(BaseModel):
    """What a producer submits; the ledger fills in the chain fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = Field(pattern=_NAME, description="Event kind, dotted, e.g. `data.generate`.")
    actor: Actor
    payload: dict[str, Any] = Field(default_factory=dict, description="Kind-specific JSON content.")
    artifacts: tuple[ArtifactRef, ...] = Field(default=(), description="Artifacts read or written.")


class SealedBody(EventDraft):
    """The stored body of an event: everything its hash covers."""

    version: int = Field(default=EVENT_SCHEMA_VERSION, description="Event schema version.")
    seq: int = Field(ge=0, description="Position in the ledger, from 0, without gaps.")
    ts: str = Field(description="UTC time of sealing, RFC 3339.")
    prev_hash: str = Field(pattern=_HEX64, description="Hash of the event at seq-1 (zeros for seq 0).")


class Event(SealedBody):
    """A sealed ledger event. `hash` = SHA-256 of `body_bytes()`."""

    hash: str = Field(pattern=_HEX64, description="SHA-256 of the canonical body.")

    def body_dict(self) -> dict[str, Any]:
        body = self.model_dump(mode="json", exclude={"hash"})
        if body["actor"].get("cap") is None:  # absent, not null: bodies from before capabilities stay as they were
            body["actor"].pop("cap", None)
        return body

    def body_bytes(self) -> bytes:
        return canonical_bytes(self.body_dict())

    @classmethod
    def from_body(cls, body: bytes, hash_: str) -> Event:
        return cls.model_validate({**parse_body(body), "hash": hash_})


_MAX_SAFE_INT = 2**53 - 1


def _parse_int(text: str) -> int | float:
    # RFC 8785 writes an integral float such as 1e20 as plain digits. Drafts never hold
    # integers beyond 2**53 (they are refused), so such a literal was a float.
    value = int(text)
    return value if -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT else float(value)


_decoder = json.JSONDecoder(parse_int=_parse_int)


def parse_body(body: bytes | str) -> dict[str, Any]:
    """Parse stored canonical bytes back into the values that were sealed."""
    return _decoder.decode(body.decode() if isinstance(body, bytes) else body)


def validate_draft(draft: EventDraft | dict[str, Any]) -> EventDraft:
    """Coerce a dict to a draft, turning validation failures into one clear error.

    Whether the payload is canonicalisable JSON (no NaN, no huge integers, no bytes) is
    checked when the draft is sealed, inside the write transaction, so a bad event in a
    batch still leaves the ledger untouched.
    """
    if isinstance(draft, EventDraft):
        return draft
    try:
        return EventDraft.model_validate(draft)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "event"
        raise MalformedEventError(f"malformed event: {where}: {first['msg']}") from None
    except ValueError as exc:
        raise MalformedEventError(f"malformed event: {exc}") from None


def seal(draft: EventDraft, *, seq: int, ts: str, prev_hash: str) -> tuple[Event, bytes]:
    """Seal a draft at a chain position; returns the event and its canonical body."""
    # Built by hand rather than with model_dump: sealing is the hot path of batched appends.
    # Python values, not JSON mode, which would quietly turn inf/NaN into null.
    body = {
        "kind": draft.kind,
        "actor": (
            {"role": draft.actor.role, "id": draft.actor.id}
            if draft.actor.cap is None
            else {"role": draft.actor.role, "id": draft.actor.id, "cap": draft.actor.cap}
        ),
        "payload": draft.payload,
        "artifacts": [{"digest": a.digest, "role": a.role, "name": a.name} for a in draft.artifacts],
        "version": EVENT_SCHEMA_VERSION,
        "seq": seq,
        "ts": ts,
        "prev_hash": prev_hash,
    }
    try:
        # Everything but the payload is validated strings and small ints.
        raw = canonical_bytes(body, checked=draft.payload)
    except ValueError as exc:
        raise MalformedEventError(f"malformed event: payload: {exc}") from None
    # The draft was validated already; the chain fields are ours.
    event = Event.model_construct(
        kind=draft.kind,
        actor=draft.actor,
        payload=draft.payload,
        artifacts=draft.artifacts,
        version=EVENT_SCHEMA_VERSION,
        seq=seq,
        ts=ts,
        prev_hash=prev_hash,
        hash=sha256_hex(raw),
    )
    return event, raw
