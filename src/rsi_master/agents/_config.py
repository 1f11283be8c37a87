"""Which agent plays each role, and for LLM agents which model behind which endpoint.

Resolved once, before a run starts, from (first wins) explicit values (command-line
flags), per-role environment variables `RSI_MASTER_<ROLE>_<FIELD>`, run-wide ones
`RSI_MASTER_LLM_<FIELD>`, the `[<role>]` and `[llm]` tables of a TOML file, then the
defaults below. The result is recorded in the ledger (`agents.config`) and the slot
processes read it from there, so a run is rebuilt from its log. The API key never
enters the ledger: only the name of the environment variable that holds it does.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import RsiMasterError
from ._fake import load_script

__all__ = [
    "AGENT_ROLES",
    "LLM_AGENTS",
    "SCRIPTED_AGENTS",
    "AgentChoice",
    "LLMConfig",
    "agent_name",
    "check_llm",
    "load_config_file",
    "resolve_llm_config",
]

AGENT_ROLES = ("main", "worker", "reviewer")
SCRIPTED_AGENTS = {"main": "policy", "worker": "tpe", "reviewer": "evidence"}
LLM_AGENTS = {"main": "llm", "worker": "llm", "reviewer": "llm"}
AgentChoice = Literal["scripted", "llm"]


class LLMConfig(BaseModel):
    """One role's model. Recorded in the ledger with the role's prompt (the key is not)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(default=1, description="Schema version.")
    provider: Literal["openai", "fake"] = Field(
        default="openai",
        description="`openai`: any OpenAI-compatible chat-completions endpoint through the "
        "official SDK; `fake`: the scripted offline model shipped in the package.",
    )
    base_url: str | None = Field(default=None, description="Endpoint, e.g. http://localhost:8000/v1.")
    model: str | None = Field(default=None, description="Model name sent to the endpoint.")
    api_key_env: str | None = Field(default=None, description="Environment variable that holds the API key.")
    script: str | None = Field(
        default=None, description="fake: a JSON script file or `module:ATTR` (default: the shipped smoke script)."
    )
    max_steps: int = Field(default=30, ge=1, description="Model turns one node (or one Main event) may take.")
    max_tokens_per_call: int = Field(default=2048, ge=16, description="Completion tokens one turn may produce.")
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = Field(
        default="max_tokens", description="Request field that carries the per-turn limit (servers differ)."
    )
    max_node_tokens: int = Field(
        default=300_000,
        ge=1,
        description="Prompt plus completion tokens one node (or one Main turn) may spend before it ends.",
    )
    max_run_tokens: int | None = Field(
        default=None, ge=1, description="Tokens all agents of the run may spend (counted from the ledger)."
    )
    timeout_s: float = Field(default=120.0, gt=0, description="Seconds one request may take.")
    retries: int = Field(default=4, ge=0, description="Retries of a failed request (rate limit, timeout, 5xx).")
    backoff_s: float = Field(default=2.0, ge=0, description="First retry delay; doubles per retry (at most 60 s).")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Sampling temperature, if set.")
    price_in_per_mtok: float = Field(default=0.0, ge=0, description="USD per million prompt tokens (cost report).")
    price_out_per_mtok: float = Field(default=0.0, ge=0, description="USD per million completion tokens.")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.price_in_per_mtok + completion_tokens * self.price_out_per_mtok) / 1e6


_FIELDS = tuple(f for f in LLMConfig.model_fields if f != "version")
_KEY_VARS = ("RSI_MASTER_{role}_API_KEY", "RSI_MASTER_LLM_API_KEY", "OPENAI_API_KEY")
_URL_VARS = ("RSI_MASTER_{role}_BASE_URL", "RSI_MASTER_LLM_BASE_URL", "OPENAI_BASE_URL")


def agent_name(role: str, choice: str) -> str:
    """`scripted` or `llm` for a role, or an agent given by registered name or `module:Class`."""
    if choice == "scripted":
        return SCRIPTED_AGENTS[role]
    if choice == "llm":
        return LLM_AGENTS[role]
    return choice


def load_config_file(path: str | Path | None) -> dict[str, Any]:
    if not path:
        return {}
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise RsiMasterError(f"LLM config file {p} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RsiMasterError(f"LLM config file {p} is not valid TOML: {exc}") from None
    unknown = set(data) - {"llm", *AGENT_ROLES}
    if unknown:
        raise RsiMasterError(
            f"LLM config file {p}: unknown tables {sorted(unknown)}; use [llm], [main], [worker], [reviewer]"
        )
    if any("api_key" in (data.get(t) or {}) for t in data):
        raise RsiMasterError(
            f"LLM config file {p} holds an api_key: keep keys in the environment and name the variable with api_key_env"
        )
    return data


def resolve_llm_config(
    role: str,
    file: dict[str, Any] | None = None,
    explicit: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> LLMConfig:
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for table in ("llm", role):
        values.update((file or {}).get(table) or {})
    for prefix in ("RSI_MASTER_LLM_", f"RSI_MASTER_{role.upper()}_"):
        for field in _FIELDS:
            if field == "api_key_env":
                continue
            v = env.get(prefix + field.upper())
            if v not in (None, ""):
                values[field] = v
    values.update({k: v for k, v in (explicit or {}).items() if v is not None})
    if not values.get("base_url"):
        url = next((env[v.format(role=role.upper())] for v in _URL_VARS if env.get(v.format(role=role.upper()))), None)
        if url:
            values["base_url"] = url
    if not values.get("api_key_env"):
        found = next((v.format(role=role.upper()) for v in _KEY_VARS if env.get(v.format(role=role.upper()))), None)
        if found:
            values["api_key_env"] = found
    try:
        return LLMConfig.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "config"
        raise RsiMasterError(
            f"LLM configuration of the {role} agent: {where}: {err['msg']} (got {err.get('input')!r})"
        ) from None


def check_llm(role: str, cfg: LLMConfig, environ: dict[str, str] | None = None) -> None:
    """Everything an LLM agent needs before the run starts, with what to set when it is missing."""
    env = os.environ if environ is None else environ
    if cfg.provider == "fake":
        load_script(cfg.script, role)  # a bad script is an error now, not in a slot process later
        return
    r = role.upper()
    missing = []
    if not cfg.base_url:
        missing.append(
            f"an endpoint (RSI_MASTER_LLM_BASE_URL or RSI_MASTER_{r}_BASE_URL, --llm-base-url, "
            f"or base_url in --llm-config)"
        )
    if not cfg.model:
        missing.append(f"a model (RSI_MASTER_LLM_MODEL or RSI_MASTER_{r}_MODEL, --llm-model, or model in --llm-config)")
    if not cfg.api_key_env or not env.get(cfg.api_key_env):
        named = f"; {cfg.api_key_env} is empty" if cfg.api_key_env else ""
        missing.append(
            f"an API key (RSI_MASTER_LLM_API_KEY, RSI_MASTER_{r}_API_KEY or OPENAI_API_KEY; any "
            f"non-empty value for a local server that ignores keys{named})"
        )
    if missing:
        raise RsiMasterError(f"the {role} agent is an LLM agent and needs " + "; and ".join(missing))
    try:
        import openai  # noqa: F401
    except ImportError:
        raise RsiMasterError("LLM agents need the openai package: pip install 'rsi-master[llm]'") from None
