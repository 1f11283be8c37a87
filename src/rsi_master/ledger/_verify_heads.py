"""What `verify_ledger` reports, and the checks of signed heads (checkpoint rows and the seal)
by themselves."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import ValidationError

from ._checkpoint import Checkpoint
from ._event import GENESIS_HASH
from ._keys import verify_signature
from ._schema import SCHEMA_VERSION

__all__ = ["LedgerReport", "Problem", "canonical_hex", "check_seal", "checkpoint_problems"]

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


def canonical_hex(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{128}", value) is not None


def checkpoint_problems(
    cp: Checkpoint, size: object, root_col: object, body: object, signature: object, public, run_id: str, version: int
) -> list[str]:
    """What is wrong with a checkpoint row by itself: its signature, form and labels."""
    out = []
    if not verify_signature(public, str(signature), body if isinstance(body, bytes) else str(body).encode()):
        out.append("signature does not verify under the run's public key")
    elif not canonical_hex(signature):  # "AB" decodes as "ab" does: the stored text was edited
        out.append("signature is not in canonical form (lower-case hex)")
    if cp.message() != body:
        out.append("body is not in canonical form")
    if cp.tree_size != size or cp.root != root_col:
        out.append("indexed columns differ from the signed body")
    if cp.run_id != run_id:
        out.append(f"signed for run {cp.run_id}, not {run_id}")
    if cp.version != version:
        out.append(f"a version-{cp.version} checkpoint in a version-{version} ledger")
    return out


def check_seal(
    report: LedgerReport, row: tuple | None, public, run_id: str, version: int, roots: dict[int, str]
) -> None:
    if row is None:
        report.add("seal", "missing: the ledger has no signed head")
        return
    size, body, signature = row
    body = body if isinstance(body, bytes) else str(body).encode()
    try:
        cp = Checkpoint.model_validate_json(body)
    except (ValueError, ValidationError):
        report.add("seal", "body is not a valid checkpoint")
        return
    if not verify_signature(public, str(signature), body) or not canonical_hex(signature):
        report.add("seal", "signature does not verify under the run's public key, or is not canonical hex")
        return
    if cp.run_id != run_id or cp.version != version or cp.tree_size != size:
        report.add("seal", "signed for another run, version or size than it is stored as")
        return
    report.sealed = cp.tree_size
    if cp.tree_size < report.events:
        report.add(
            f"event {cp.tree_size}",
            f"events {cp.tree_size}..{report.events - 1} are not covered by the "
            "signed head: not written by a holder of the run's key "
            "(appended with a recomputed chain?)",
        )
    elif cp.tree_size > report.events:
        report.add("ledger", f"truncated: the signed head covers {cp.tree_size} events, the ledger has {report.events}")
    elif roots.get(cp.tree_size) != cp.root:
        report.add("seal", "Merkle root differs from the events stored (history rewritten)")
