"""A run's agent setup: which agent plays each role, each LLM agent's configuration and
prompt, recorded in the ledger as `agents.config` before any agent acts.

Prompts are package data (`prompts/<role>.md`, versioned in their first line). The
recorded prompt is stored as an artifact and the agents read it from the run's store,
so a resumed run speaks with the prompt it started with.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import RsiMasterError
from ..events import AgentsConfig, typed
from ..orchestra import ORCHESTRA, agent_names, resolve_agent
from ._config import AGENT_ROLES, LLM_AGENTS, LLMConfig, agent_name, check_llm, load_config_file, resolve_llm_config

if TYPE_CHECKING:
    from ..expos import ExpOS, RunReader

__all__ = [
    "AGENTS_KIND",
    "AgentsSetup",
    "Prompt",
    "check_recorded",
    "load_prompt",
    "record_setup",
    "recorded_role",
    "resolve_setup",
]

AGENTS_KIND = "agents.config"
_HEADER = re.compile(r"<!-- prompt: (\w+), version (\d+) -->\n")


@dataclass(frozen=True)
class Prompt:
    role: str
    version: int
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def load_prompt(role: str) -> Prompt:
    text = resources.files(__package__).joinpath("prompts", f"{role}.md").read_text()
    m = _HEADER.match(text)
    if not m or m.group(1) != role:
        raise RsiMasterError(f"prompt {role}.md lacks its version header")
    return Prompt(role, int(m.group(2)), text[m.end() :].strip() + "\n")


class AgentsSetup(BaseModel):
    """Per role: the agent (registered name or `module:Class`) and, for LLM agents, the model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(default=1, description="Schema version.")
    agents: dict[str, str] = Field(description="Role -> agent implementation.")
    llm: dict[str, LLMConfig] = Field(default_factory=dict, description="Role -> model, for LLM agents.")


def resolve_setup(
    agents: str = "scripted",
    *,
    main: str | None = None,
    worker: str | None = None,
    reviewer: str | None = None,
    config_file: str | None = None,
    explicit: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> AgentsSetup:
    """Choose each role's agent and check what LLM agents need, before anything is written."""
    if agents not in ("scripted", "llm"):
        raise RsiMasterError(f"--agents must be scripted or llm, got {agents!r}")
    chosen = {r: agent_name(r, c or agents) for r, c in (("main", main), ("worker", worker), ("reviewer", reviewer))}
    for role, name in chosen.items():
        _check_agent(role, name)
    file = load_config_file(config_file)
    llm = {}
    for role in AGENT_ROLES:
        if chosen[role] == LLM_AGENTS[role]:
            cfg = resolve_llm_config(role, file, explicit, environ)
            check_llm(role, cfg, environ)
            llm[role] = cfg
    return AgentsSetup(agents=chosen, llm=llm)


def record_setup(expos: ExpOS, setup: AgentsSetup) -> None:

    llm: dict[str, dict[str, Any]] = {}
    artifacts = []
    for role, cfg in setup.llm.items():
        prompt = load_prompt(role)
        tmp = expos.scratch() / f"prompt_{role}.md"
        tmp.write_text(prompt.text)
        digest = expos.run.store.put_file(tmp, move=True)
        expos.drop_scratch(tmp.parent)
        llm[role] = {
            **cfg.model_dump(mode="json"),
            "prompt": {"role": role, "version": prompt.version, "sha256": prompt.sha256, "artifact": digest},
        }
        artifacts.append({"digest": digest, "role": "output", "name": f"prompt_{role}"})
    expos.record(ORCHESTRA, AgentsConfig(version=setup.version, agents=dict(setup.agents), llm=llm), artifacts)


def recorded_role(reader: RunReader, role: str) -> tuple[LLMConfig, Prompt]:
    """The role's model and prompt as the run recorded them."""
    events = reader.events(AGENTS_KIND)
    entry = typed(events[-1], AgentsConfig).payload.llm.get(role) if events else None
    if entry is None:
        raise RsiMasterError(
            f"this run recorded no LLM configuration for the {role} role; start it with "
            f"`rsi-master run --{role} llm` (or --agents llm)"
        )
    p = entry["prompt"]
    text = reader.store.read_bytes(p["artifact"]).decode()
    cfg = LLMConfig.model_validate({k: v for k, v in entry.items() if k != "prompt"})
    return cfg, Prompt(role, int(p["version"]), text)


def recorded_configs(reader: RunReader) -> list[LLMConfig]:
    """The models of the run's LLM roles, as recorded."""
    return [recorded_role(reader, role)[0] for role in typed(reader.events(AGENTS_KIND)[-1], AgentsConfig).payload.llm]


def check_recorded(reader: RunReader, environ: dict[str, str] | None = None) -> None:
    """What a resumed run's LLM agents need from this process's environment (their keys)."""
    for role in typed(reader.events(AGENTS_KIND)[-1], AgentsConfig).payload.llm:
        cfg, _ = recorded_role(reader, role)
        check_llm(role, cfg, environ)


def _check_agent(role: str, name: str) -> None:
    """A registered agent's name or an importable `package.module:Class`, or a clear error now
    (the scheduler and the slot processes would otherwise fail mid-run)."""

    try:
        found = resolve_agent(role, name)
    except KeyError:
        raise RsiMasterError(
            f"--{role} {name!r}: give scripted, llm, a registered {role} agent "
            f"({', '.join(n for n in agent_names(role) if n != 'llm')}) or package.module:Class"
        ) from None
    except (ImportError, AttributeError, ValueError) as exc:
        raise RsiMasterError(f"--{role} {name}: cannot load it ({exc})") from None
    if not callable(found):  # the scheduler makes each agent as `Class()` (or a registered factory's call)
        attr = name.split(":", 1)[-1]
        raise RsiMasterError(f"--{role} {name}: {attr} is a {type(found).__name__}, not a class")
