"""What `verify_ledger` found: the counts it re-computed and each thing that does not hold."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._event import GENESIS_HASH
from ._schema import SCHEMA_VERSION

__all__ = ["LedgerReport", "Problem"]

_MAX_PROBLEMS = 50


@dataclass(frozen=True)
class Problem:
    """One thing that does not hold. `where` names the event, checkpoint or artifact."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass
class LedgerReport:
    events: int = 0
    checkpoints: int = 0
    head: str = GENESIS_HASH
    root: str = ""
    witness_size: int | None = None
    last_checkpoint: int = 0
    version: int = int(SCHEMA_VERSION)
    sealed: int | None = None  # events the seal (signed head) covers; None: no valid seal
    problems: list[Problem] = field(default_factory=list)
    referenced: dict[str, int] = field(default_factory=dict)  # digest -> first seq referencing it

    def add(self, where: str, what: str) -> None:
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(Problem(where, what))

    @property
    def ok(self) -> bool:
        return not self.problems
