"""Layer 5: ExpOS, the experiment operating system.

The only way an agent touches data, training and evaluation: typed, role-scoped tools
under a frozen task contract, with guards for every subcategory of the integrity
taxonomy and an audit computed from the ledger and the run directory alone.
"""

from ._audit import AuditReport, Finding, SubmissionAudit, audit
from ._boundary import AgentProcess, boundary_statement, lock_down
from ._caller import Caller
from ._capability import (
    INLINE_REFUSED,
    NODE_ID,
    OPERATOR_ROLE,
    Capability,
    CapabilityError,
    capability_id,
    check_capability,
    peek_capability,
    read_capability,
)
from ._catalogue import llm_tool_schemas, tools_for
from ._context import ToolContext
from ._contract import Budget, EvaluatorSpec, TaskContract, TaskSource
from ._door import Door, DoorUnreachable, door_call
from ._errors import NothingSampled, ToolError, ToolFailed, ToolInvalid, ToolRefused
from ._evaluation import adapter_base_of, evaluate_experiment, record_evaluation, sealed_evaluation
from ._experiments import adopt_checkpoint
from ._external import external_call
from ._freeze import check_run_inputs
from ._generator_view import GeneratorView, KnobView, generator_views
from ._graph import by_worker, checkpoint_lineage, evidence, lineage
from ._guards import OVERRIDE_KEYS, GuardPolicy, Shortcut, ShortcutRun, Strict, Unguarded
from ._identity import AgentLimits, parse_size
from ._kinds import EVENT_KINDS
from ._ports import AuditRun, EvalRun, ExperimentBackend, TrainRun
from ._projection import Part, Projection, SharedProjections, parse_ts, register_part
from ._prune import KEEP_POLICIES, protected_checkpoints, prune_checkpoints
from ._reader import RunReader, load_state
from ._registry import ROLES, TOOLS, Tool
from ._secrets import SealAccess
from ._session import ExpOS
from ._state import Decision, Experiment, ReviewerNode, State, WorkerRecord
from ._taxonomy import GROUPS, SUBCATEGORIES, Observation, Subcategory
from ._tools_main import Added, GraphView
from ._tools_reviewer import AuditView, Comparison, Inspection, ReviewEval
from ._tools_worker_results import EvalScore

__all__ = [
    "EVENT_KINDS",
    "GROUPS",
    "INLINE_REFUSED",
    "KEEP_POLICIES",
    "NODE_ID",
    "OPERATOR_ROLE",
    "OVERRIDE_KEYS",
    "ROLES",
    "SUBCATEGORIES",
    "TOOLS",
    "Added",
    "AgentLimits",
    "AgentProcess",
    "AuditReport",
    "AuditRun",
    "AuditView",
    "Budget",
    "Caller",
    "Capability",
    "CapabilityError",
    "Comparison",
    "Decision",
    "Door",
    "DoorUnreachable",
    "EvalRun",
    "EvalScore",
    "EvaluatorSpec",
    "ExpOS",
    "Experiment",
    "ExperimentBackend",
    "Finding",
    "GeneratorView",
    "GraphView",
    "GuardPolicy",
    "Inspection",
    "KnobView",
    "NothingSampled",
    "Observation",
    "Part",
    "Projection",
    "ReviewEval",
    "ReviewerNode",
    "RunReader",
    "SealAccess",
    "SharedProjections",
    "Shortcut",
    "ShortcutRun",
    "State",
    "Strict",
    "Subcategory",
    "SubmissionAudit",
    "TaskContract",
    "TaskSource",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolFailed",
    "ToolInvalid",
    "ToolRefused",
    "TrainRun",
    "Unguarded",
    "WorkerRecord",
    "adapter_base_of",
    "adopt_checkpoint",
    "audit",
    "boundary_statement",
    "by_worker",
    "capability_id",
    "check_capability",
    "check_run_inputs",
    "checkpoint_lineage",
    "door_call",
    "evaluate_experiment",
    "evidence",
    "external_call",
    "generator_views",
    "lineage",
    "llm_tool_schemas",
    "load_state",
    "lock_down",
    "parse_size",
    "parse_ts",
    "peek_capability",
    "protected_checkpoints",
    "prune_checkpoints",
    "read_capability",
    "record_evaluation",
    "register_part",
    "sealed_evaluation",
    "tools_for",
]
