"""Every event kind the package records, in one place.

The ledger takes any dotted name; the kinds themselves are written where they happen
(`expos.record(caller, "data.check", ...)`) across ExpOS, the orchestra, the agents, the
bench workspace and the demo. `rsi-master log --kind` checks a filter against this set,
so that a typo is an error instead of an empty table, and tests/expos/test_tools.py
reads every `record(...)` call in the source and fails when a kind is missing here.
"""

from __future__ import annotations

__all__ = ["EVENT_KINDS"]

EVENT_KINDS: frozenset[str] = frozenset({
    # ExpOS: the contract, the door, the tools
    "contract.freeze",
    "tool.call", "tool.invalid", "tool.failed", "guard.blocked",
    "data.generate", "data.register", "data.filter", "data.mix", "data.check",
    "experiment.start", "experiment.finish", "eval.record",
    "worker.add", "worker.finalize", "review.request", "review.submit", "decision.record", "candidate.nominate",
    "audit.run",
    # agents
    "agents.config", "agent.step", "agent.end", "agent.error",
    # orchestra and harness
    "orchestra.start", "orchestra.resume", "orchestra.stop", "orchestra.finish", "orchestra.interrupted",
    "orchestra.abandon", "orchestra.job.start", "orchestra.job.end",
    "harness.select", "harness.final",
    # `rsi-master demo`
    "source.register",
})
