"""One payload model per event kind: the only place payload fields are named.

Each model is the payload exactly as its writer records it. A field a writer leaves out
is optional and stays absent from the stored bytes (`dump_payload` keeps the fields
set), so a payload's bytes are what was written. Split by who writes the events.
"""

from ._contract import CONTRACT_KIND, CONTRACT_VERSION, Budget, EvaluatorSpec, TaskContract
from ._expos import (
    AuditRun,
    CandidateNominate,
    Claim,
    Contamination,
    DataCheck,
    DataFilter,
    DataGenerate,
    DataMix,
    DataRegister,
    DecisionRecord,
    EvalRecord,
    ExperimentFinish,
    ExperimentStart,
    GuardBlocked,
    LedgerFacts,
    Measured,
    ReviewRequest,
    ReviewSubmit,
    ToolCall,
    ToolFailed,
    ToolInvalid,
    ToolKind,
    WorkerAdd,
    WorkerFinalize,
)
from ._run import (
    AgentEnd,
    AgentError,
    AgentsConfig,
    AgentStep,
    HarnessFinal,
    HarnessSelect,
    OrchestraAbandon,
    OrchestraFinish,
    OrchestraInterrupted,
    OrchestraJobEnd,
    OrchestraJobStart,
    OrchestraResume,
    OrchestraStart,
    OrchestraStop,
    SelectionRow,
    SourceRegister,
    StepToolCall,
)

__all__ = [
    "CONTRACT_KIND", "CONTRACT_VERSION", "AgentEnd", "AgentError", "AgentStep", "AgentsConfig", "AuditRun", "Budget",
    "CandidateNominate", "Claim", "Contamination", "DataCheck", "DataFilter", "DataGenerate", "DataMix",
    "DataRegister", "DecisionRecord", "EvalRecord", "EvaluatorSpec", "ExperimentFinish", "ExperimentStart",
    "GuardBlocked", "HarnessFinal", "HarnessSelect", "LedgerFacts", "Measured", "OrchestraAbandon",
    "OrchestraFinish", "OrchestraInterrupted", "OrchestraJobEnd", "OrchestraJobStart", "OrchestraResume",
    "OrchestraStart", "OrchestraStop", "ReviewRequest", "ReviewSubmit", "SelectionRow", "SourceRegister",
    "StepToolCall", "TaskContract", "ToolCall", "ToolFailed", "ToolInvalid", "ToolKind", "WorkerAdd",
    "WorkerFinalize",
]
