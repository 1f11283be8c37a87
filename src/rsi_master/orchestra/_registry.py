"""Agents by name: the one place a name a run records (its Main, Worker and Reviewer agents in
`orchestra.start`, a Worker's `direction.agent`) turns into the code that runs it.

An agent registers under a short name where it is defined (`@main_agent("no-review")`), and the
ledger records that name, never an import path: the code may move, a run's record stays readable.
A slot process starts fresh (spawned, or on another machine), so a name not yet registered there
is looked up by importing the packages that define built-in agents (`AGENT_PACKAGES`). Runs
recorded before agents had names hold import paths: `LEGACY_PATHS` names the agent each stood
for, and any other `package.module:Class` is still imported as it is (an agent defined outside
this package).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = [
    "AGENT_PACKAGES",
    "GUARD_POLICIES",
    "LEGACY_PATHS",
    "MAINS",
    "REVIEWERS",
    "WORKERS",
    "agent_names",
    "guard_policy_class",
    "main_agent",
    "resolve",
    "resolve_agent",
    "reviewer_agent",
    "worker_agent",
]

MAINS: dict[str, Callable[[], Any]] = {}
WORKERS: dict[str, Callable[[], Any]] = {}
REVIEWERS: dict[str, Callable[[], Any]] = {}
# The guard policies an unguarded run's `orchestra.start` may name as its environment (the
# bench's no-ExpOS workspace): recorded by name like the agents.
GUARD_POLICIES: dict[str, Callable[[], Any]] = {}

# Importing each of these registers its agents: the orchestra's own (policy Main, TPE Worker,
# evidence Reviewer), the LLM agents, and the bench's (its ablations' Mains, search and shortcut
# Workers, its workspace guard policy).
AGENT_PACKAGES = ("rsi_master.orchestra", "rsi_master.agents", "rsi_master.bench")

# What older runs recorded, and the name of the agent it stood for.
LEGACY_PATHS = {
    "rsi_master.bench._mains:NoReviewMain": "no-review",
    "rsi_master.bench._mains:MainPickMain": "main-pick",
    "rsi_master.bench._mains:SingleMain": "single",
    "rsi_master.bench._mains:SearchMain": "search",
    "rsi_master.bench._pbt:PBTMain": "pbt",
    "rsi_master.bench._workers:ShortcutWorker": "shortcut",
    "rsi_master.bench._workers:TPESearchWorker": "tpe-search",
    "rsi_master.bench._workers:RandomSearchWorker": "random-search",
    "rsi_master.bench._peers:ASHAWorker": "asha",
    "rsi_master.bench._peers:HyperbandWorker": "hyperband",
    "rsi_master.agents:LLMMain": "llm",
    "rsi_master.agents:LLMWorker": "llm",
    "rsi_master.agents:LLMReviewer": "llm",
    "rsi_master.bench._workspace:Workspace": "workspace",
}


def _table(role: str) -> dict[str, Callable[[], Any]]:
    return {"main": MAINS, "worker": WORKERS, "reviewer": REVIEWERS}[role]


def _register(table: dict[str, Callable[[], Any]], name: str) -> Callable[[Any], Any]:
    def deco(factory: Any) -> Any:
        if name in table:
            raise ValueError(f"agent {name} registered twice")
        if ":" in name:
            raise ValueError(f"agent name {name!r} has a colon: it would read as an import path")
        table[name] = factory
        return factory

    return deco


def worker_agent(name: str) -> Callable[[Any], Any]:
    return _register(WORKERS, name)


def reviewer_agent(name: str) -> Callable[[Any], Any]:
    return _register(REVIEWERS, name)


def main_agent(name: str) -> Callable[[Any], Any]:
    return _register(MAINS, name)


def guard_policy_class(name: str) -> Callable[[Any], Any]:
    """Register a guard policy (a subclass of `expos.Unguarded`) under the name a run records."""
    return _register(GUARD_POLICIES, name)


def _load_builtins() -> None:
    for package in AGENT_PACKAGES:
        importlib.import_module(package)


def agent_names(role: str) -> list[str]:
    """Every registered agent of a role, built-ins included, sorted."""
    _load_builtins()
    return sorted(_table(role))


def resolve(table: dict[str, Callable[[], Any]], name: str) -> Callable[[], Any]:
    """The factory of a registered agent, by name; an import path an older run recorded maps to
    the agent it stood for (`LEGACY_PATHS`), any other `package.module:Class` is imported.
    Raises KeyError for an unknown name, ImportError or AttributeError for a path that does not
    load."""
    name = LEGACY_PATHS.get(name, name)
    if ":" in name:
        module, attr = name.split(":", 1)
        factory: Callable[[], Any] = getattr(importlib.import_module(module), attr)
        return factory
    if name not in table:
        _load_builtins()
    return table[name]


def resolve_agent(role: str, name: str) -> Callable[[], Any]:
    """`resolve` in the registry of a role (main, worker or reviewer)."""
    return resolve(_table(role), name)
