"""LLM-backed Main, Worker and Reviewer agents over any OpenAI-compatible endpoint.

They implement the orchestra's agent protocols and act only through their role's ExpOS
tools, in a bounded loop whose steps, tokens and cost are recorded in the ledger. The
`fake` provider (scripted replies and tool calls) runs them offline. Nothing here is
imported by `import rsi_master`; the `openai` SDK is imported only when a real
endpoint is used.
"""

from ._config import AGENT_ROLES, LLM_AGENTS, SCRIPTED_AGENTS, LLMConfig, agent_name, check_llm, resolve_llm_config
from ._fake import FakeModel, load_script
from ._loop import AgentLoop, Outcome, run_tokens
from ._main import LLMMain
from ._memory import ActionStep, Memory, NoteStep, TaskStep, ToolCallRecord
from ._model import ChatModel, Completion, ProviderError, ToolCall
from ._nodes import LLMReviewer, LLMWorker
from ._probe import check_endpoints
from ._providers import make_model
from ._setup import (
    AGENTS_KIND,
    AgentsSetup,
    Prompt,
    check_recorded,
    load_prompt,
    record_setup,
    recorded_configs,
    recorded_role,
    resolve_setup,
)

__all__ = [
    "AGENTS_KIND",
    "AGENT_ROLES",
    "LLM_AGENTS",
    "SCRIPTED_AGENTS",
    "ActionStep",
    "AgentLoop",
    "AgentsSetup",
    "ChatModel",
    "Completion",
    "FakeModel",
    "LLMConfig",
    "LLMMain",
    "LLMReviewer",
    "LLMWorker",
    "Memory",
    "NoteStep",
    "Outcome",
    "Prompt",
    "ProviderError",
    "TaskStep",
    "ToolCall",
    "ToolCallRecord",
    "agent_name",
    "check_endpoints",
    "check_llm",
    "check_recorded",
    "load_prompt",
    "load_script",
    "make_model",
    "record_setup",
    "recorded_configs",
    "recorded_role",
    "resolve_llm_config",
    "resolve_setup",
    "run_tokens",
]
