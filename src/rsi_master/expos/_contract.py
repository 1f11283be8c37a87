"""The task contract: what a run may do, frozen at run start as the first ledger event.
It is the payload of `contract.freeze`, so it is defined with the other payloads in
`rsi_master.events`; ExpOS's guards read it from here."""

from __future__ import annotations

from ..events import CONTRACT_KIND, CONTRACT_VERSION, Budget, EvaluatorSpec, TaskContract, TaskSource

__all__ = ["CONTRACT_KIND", "CONTRACT_VERSION", "Budget", "EvaluatorSpec", "TaskContract", "TaskSource"]
