"""Event schema v2: one pydantic payload model per event kind, typed views of ledger events.

Layer: above `ledger`, below everything else. Writers build the kind's payload model and
hand it to the record path (`ExpOS.record`), which validates what it is given; readers
call `typed(event)` (or `payload_of(event, Model)`) and read attributes, never dict keys.
`python -m rsi_master.events` writes the JSON Schema of every kind to docs/events.md.
"""

from ._base import PAYLOADS, Payload, Record, dump_payload
from ._payloads import *  # noqa: F403  (the payload models)
from ._payloads import __all__ as _payload_names
from ._typed import (
    SCHEMA_VERSION,
    TypedEvent,
    UnknownEventKind,
    event_adapter,
    payload_model,
    payload_of,
    typed,
    validate_payload,
)

__all__ = sorted([
    "PAYLOADS", "SCHEMA_VERSION", "Payload", "Record", "TypedEvent", "UnknownEventKind", "dump_payload",
    "event_adapter", "payload_model", "payload_of", "typed", "validate_payload", *_payload_names,
])
