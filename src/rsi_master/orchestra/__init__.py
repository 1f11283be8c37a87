"""Layer 6: Orchestra, reviewer-guided research orchestration.

A Main agent grows a research graph of Worker nodes (directions explored through ExpOS
experiments) and Reviewer nodes (questions checked against ExpOS evidence), acting only
at orchestration events (a Worker finalizing, a Reviewer reporting). Nodes run in
parallel on a local pool of slot processes under a wall-clock budget; the harness
selects the returned checkpoint on `review` and scores it once on `final`.
Programmatic agents ship here; the protocols admit LLM-backed ones.
"""

from ._briefs import Conclusion, ReviewerBrief, WorkerBrief
from ._curves import Forecast, forecast
from ._directions import (
    DEFAULT_TRAIN,
    OPENING_TRIAL,
    Direction,
    Range,
    default_directions,
    grpo_batch_problem,
    knob_ranges,
    opening_batch,
    within_ranges,
)
from ._display import Display, PlainDisplay, RichDisplay, make_display
from ._evidence import Evidence
from ._graph import (
    ORCHESTRA,
    Decision,
    Job,
    OrchestraEvent,
    OrchestraPart,
    ResearchGraph,
    ReviewerNode,
    WorkerNode,
    load_graph,
)
from ._guidance import (
    Guidance,
    GuidanceError,
    GuidancePart,
    check_guidance,
    give_guidance,
    guide_run,
    operator_id,
)
from ._harness import evaluate_final, final_scores, select
from ._job import run_timing
from ._main_budget import BudgetRule, min_budget_s
from ._main_parts import Candidate, Nomination, Plan, Verifier
from ._main_plans import Plans
from ._main_policy import PolicyMain, expected_scores
from ._main_verify import ClaimsNomination, ClaimsVerifier, MainPick, ReviewNomination, ReviewVerifier
from ._memory import Trial, worker_memory
from ._metrics import KINDS, run_metrics
from ._orchestra import resume_run, start_run
from ._prior import SHIPPED_PRIOR, check_prior, read_prior, run_prior
from ._protocols import (
    MAINS,
    REVIEWERS,
    WORKERS,
    BudgetEnd,
    MainAgent,
    MainContext,
    NodeContext,
    ReviewerAgent,
    ReviewerContext,
    WorkerAgent,
    WorkerContext,
    main_agent,
    reviewer_agent,
    worker_agent,
)
from ._registry import agent_names, guard_policy_class, resolve_agent
from ._reviewer import EvidenceReviewer
from ._runspec import DEFAULTS, ResolvedRun, RunSpec, default_budget, parse_budget, resolve_spec, resolve_task_ref
from ._scheduler import Scheduler
from ._search_space import order_bounds, search_distribution
from ._worker import TPEWorker, trial_seconds

__all__ = [
    "DEFAULTS",
    "DEFAULT_TRAIN",
    "KINDS",
    "MAINS",
    "OPENING_TRIAL",
    "ORCHESTRA",
    "REVIEWERS",
    "SHIPPED_PRIOR",
    "WORKERS",
    "BudgetEnd",
    "BudgetRule",
    "Candidate",
    "ClaimsNomination",
    "ClaimsVerifier",
    "Conclusion",
    "Decision",
    "Direction",
    "Display",
    "Evidence",
    "EvidenceReviewer",
    "Forecast",
    "Guidance",
    "GuidanceError",
    "GuidancePart",
    "Job",
    "MainAgent",
    "MainContext",
    "MainPick",
    "NodeContext",
    "Nomination",
    "OrchestraEvent",
    "OrchestraPart",
    "PlainDisplay",
    "Plan",
    "Plans",
    "PolicyMain",
    "Range",
    "ResearchGraph",
    "ResolvedRun",
    "ReviewNomination",
    "ReviewVerifier",
    "ReviewerAgent",
    "ReviewerBrief",
    "ReviewerContext",
    "ReviewerNode",
    "RichDisplay",
    "RunSpec",
    "Scheduler",
    "TPEWorker",
    "Trial",
    "Verifier",
    "WorkerAgent",
    "WorkerBrief",
    "WorkerContext",
    "WorkerNode",
    "agent_names",
    "check_guidance",
    "check_prior",
    "default_budget",
    "default_directions",
    "evaluate_final",
    "expected_scores",
    "final_scores",
    "forecast",
    "give_guidance",
    "grpo_batch_problem",
    "guard_policy_class",
    "guide_run",
    "knob_ranges",
    "load_graph",
    "main_agent",
    "make_display",
    "min_budget_s",
    "opening_batch",
    "operator_id",
    "order_bounds",
    "parse_budget",
    "read_prior",
    "resolve_agent",
    "resolve_spec",
    "resolve_task_ref",
    "resume_run",
    "reviewer_agent",
    "run_metrics",
    "run_prior",
    "run_timing",
    "search_distribution",
    "select",
    "start_run",
    "trial_seconds",
    "within_ranges",
    "worker_agent",
    "worker_memory",
]
