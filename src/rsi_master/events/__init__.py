"""Event schema v2: one pydantic payload model per event kind, typed views of ledger events.

Layer: above `ledger`, below everything else. Writers build the kind's payload model and
hand it to the record path (`ExpOS.record`), which validates what it is given; readers
call `typed(event)` (or `payload_of(event, Model)`) and read attributes, never dict keys.
`python -m rsi_master.events` writes the JSON Schema of every kind to docs/events.md.
"""

from ._base import PAYLOADS, Payload, Record, dump_payload
from ._payloads import *  # noqa: F403  (the payload models)
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

__all__ = [
    "AgentEnd", "AgentError", "AgentStep", "AgentsConfig", "AuditRun", "Budget", "CONTRACT_KIND",
    "CONTRACT_VERSION", "CandidateNominate", "Claim", "Contamination", "DataCheck", "DataFilter", "DataGenerate",
    "DataMix", "DataRegister", "DecisionRecord", "EvalRecord", "EvaluatorSpec", "ExperimentFinish",
    "ExperimentStart", "GuardBlocked", "HarnessFinal", "HarnessSelect", "LedgerFacts", "Measured",
    "OrchestraAbandon", "OrchestraFinish", "OrchestraInterrupted", "OrchestraJobEnd", "OrchestraJobStart",
    "OrchestraResume", "OrchestraStart", "OrchestraStop", "PAYLOADS", "Payload", "Record", "ReviewRequest",
    "ReviewSubmit", "SCHEMA_VERSION", "SelectionRow", "SourceRegister", "StepToolCall", "TaskContract",
    "ToolCall", "ToolFailed", "ToolInvalid", "ToolKind", "TypedEvent", "UnknownEventKind", "WorkerAdd",
    "WorkerFinalize", "dump_payload", "event_adapter", "payload_model", "payload_of", "typed", "validate_payload",
]
