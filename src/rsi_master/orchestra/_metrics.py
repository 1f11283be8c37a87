"""Measurements of a run, from its ledger: worker-slot utilisation and tool calls by kind
per fifth of the budget (is late activity redirection or idle monitoring?)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from ..events import AgentEnd, AgentError, AgentStep, ToolCall, typed
from ._graph import ResearchGraph, parse_ts

if TYPE_CHECKING:
    from ..expos import RunReader

__all__ = ["KINDS", "llm_usage", "run_metrics"]

KINDS = ("launching", "monitoring", "comparing", "reviewing", "deciding")


def _windows(reader: RunReader, graph: ResearchGraph) -> list[tuple[float, float, int, float]]:
    """Agent phase of each session: (start ts, end ts, slots, budget seconds spent before it)."""
    stops = [parse_ts(e.ts) for e in reader.own_events("orchestra.stop")]
    out = []
    before = 0.0
    for i, (_seq, start, p) in enumerate(graph.sessions):
        nxt = (
            graph._ts_before.get(graph.sessions[i + 1][0], graph.last_ts)
            if i + 1 < len(graph.sessions)
            else graph.last_ts
        )
        end = min([s for s in stops if start <= s <= nxt] or [nxt])
        out.append((start, end, p.slots, before))
        before += max(0.0, nxt - start)
    return out


def run_metrics(reader: RunReader, graph: ResearchGraph) -> dict[str, Any]:
    budget = graph.settings.budget_s if graph.settings is not None else 0.0
    windows = _windows(reader, graph)
    available = sum(max(0.0, e - s) * n for s, e, n, _ in windows)
    busy = 0.0
    for j in graph.jobs:
        end = j.end_ts if j.end_ts is not None else graph.last_ts
        for s, e, _, _ in windows:
            busy += max(0.0, min(end, e) - max(j.start_ts, s))
    fifths: list[Counter[str]] = [Counter() for _ in range(5)]
    by_role: Counter[str] = Counter()
    for ev in reader.events("tool.call"):
        ts = parse_ts(ev.ts)
        win = next((w for w in windows if w[0] <= ts <= w[1]), None)
        if win is None or budget <= 0:
            continue
        pos = win[3] + (ts - win[0])
        fifths[min(4, max(0, int(5 * pos / budget)))][typed(ev, ToolCall).payload.kind] += 1
        by_role[ev.actor.role] += 1
    actions = Counter(d.action for d in graph.decisions)
    llm = llm_usage(reader)
    return {
        "llm": llm,
        "llm_tokens": llm["prompt_tokens"] + llm["completion_tokens"],
        "llm_cost_usd": round(llm["cost_usd"], 6),
        "slot_utilisation": busy / available if available else 0.0,
        "busy_slot_seconds": round(busy, 3),
        "available_slot_seconds": round(available, 3),
        "sessions": len(graph.sessions),
        "tool_calls_by_fifth": [{k: c.get(k, 0) for k in KINDS} for c in fifths],
        "tool_calls_by_role": dict(sorted(by_role.items())),
        "decisions_by_action": dict(sorted(actions.items())),
        "jobs": [
            {
                "node": j.node,
                "kind": j.kind,
                "slot": j.slot,
                "seconds": round((j.end_ts or graph.last_ts) - j.start_ts, 3),
                "status": j.status,
            }
            for j in graph.jobs
        ],
    }


def llm_usage(reader: RunReader) -> dict[str, Any]:
    """What LLM agents spent, from their `agent.step` records: turns, tokens, cost, failed
    requests and how their turns ended, in total and per role."""
    total = {"turns": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "failed_requests": 0}
    by_role: dict[str, dict[str, Any]] = {}
    ends: Counter[str] = Counter()
    for e in reader.events("agent.step", "agent.error", "agent.end"):
        role = by_role.setdefault(e.actor.role, dict.fromkeys(total, 0) | {"cost_usd": 0.0})
        p = typed(e).payload
        if isinstance(p, AgentStep):
            for bucket in (total, role):
                bucket["turns"] += 1
                bucket["prompt_tokens"] += p.prompt_tokens
                bucket["completion_tokens"] += p.completion_tokens
                bucket["cost_usd"] += p.cost_usd
        elif isinstance(p, AgentError):
            total["failed_requests"] += 1
            role["failed_requests"] += 1
        elif isinstance(p, AgentEnd):
            ends[p.reason] += 1
    return {**total, "by_role": dict(sorted(by_role.items())), "episode_ends": dict(sorted(ends.items()))}
