"""A tool implementation gets the typed context the door builds for its call, never the session."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from rsi_master.expos import Caller, ExpOS, ToolContext, ToolRefused
from rsi_master.expos._catalogue import load
from rsi_master.expos._registry import TOOLS

# What a tool must not reach: the session's lifecycle, identity, seal, door and run directory.
SESSION_ONLY = (
    "create",
    "open",
    "close",
    "issue",
    "authenticate",
    "seal_key",
    "sealed_evaluator",
    "seal_problems",
    "call",
    "run",
    "quota",
    "final_seq",
)


def test_every_tool_implementation_takes_a_tool_context():
    load()
    assert TOOLS
    for tool in TOOLS.values():
        first = next(iter(inspect.signature(tool.impl).parameters.values()))
        assert first.annotation in (ToolContext, "ToolContext"), f"{tool.name} takes {first.name}: {first.annotation}"


def test_the_door_hands_each_call_a_context_that_reaches_no_session_internal(tmp_path, monkeypatch):
    seen: list[ToolContext] = []
    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=4) as run:
        caller = Caller("public", "p")
        before = run.call(caller, "quota.show")
        tool = TOOLS["quota.show"]

        def spy(ctx, who, inp):
            seen.append(ctx)
            return tool.impl(ctx, who, inp)

        monkeypatch.setitem(TOOLS, "quota.show", dataclasses.replace(tool, impl=spy))
        after = run.call(caller, "quota.show")
        run.call(caller, "quota.show")
        records = [(e.kind, e.actor, e.payload, e.artifacts) for e in run.events("tool.call")]

        assert after == before
        # The records of a call are the same whoever holds the context.
        assert records[0] == records[1] == records[2]
        assert len(seen) == 2 and seen[0] is not seen[1] and all(isinstance(c, ToolContext) for c in seen)
        ctx = seen[0]
        assert not [name for name in SESSION_ONLY if hasattr(ctx, name)]
        assert not any(isinstance(getattr(ctx, f.name), ExpOS) for f in dataclasses.fields(ctx))
        assert ctx.contract == run.contract and ctx.state() is run.projection().state
        with pytest.raises(ToolRefused, match="not here"):  # the run's policy is Strict: a guard refuses
            ctx.guard("not here")
