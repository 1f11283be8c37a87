"""`verify`: recompute every hash, signature, root and artifact digest of a run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..ledger import KeyDir, LedgerReport, Problem, SignedCheckpoint, verify_ledger
from ._rundir import RunDir

__all__ = ["RunReport", "verify_run"]


@dataclass
class RunReport:
    run_dir: str
    run_id: str
    ledger: LedgerReport
    artifacts: int = 0
    unsigned_tail: int = 0
    witness: str | None = None
    seconds: float = 0.0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "run_dir": self.run_dir,
            "run_id": self.run_id,
            "events": self.ledger.events,
            "checkpoints": self.ledger.checkpoints,
            "unsigned_tail": self.unsigned_tail,
            "artifacts": self.artifacts,
            "head": self.ledger.head,
            "root": self.ledger.root,
            "witness": self.witness,
            "problems": [str(p) for p in self.problems],
            "seconds": round(self.seconds, 3),
        }


def verify_run(path: Path | str, *, key_dir: KeyDir | Path | str | None = None,
               checkpoint: Path | str | None = None) -> RunReport:
    """Verify a run directory; an exported checkpoint (explicit, or the key directory's
    witness for this run) also catches a ledger replaced by an older copy."""
    start = time.perf_counter()
    keys = key_dir if isinstance(key_dir, KeyDir) else KeyDir(key_dir)
    run = RunDir.open(path, key_dir=keys)
    try:
        witness, witness_src = None, None
        if checkpoint is not None:
            witness, witness_src = SignedCheckpoint.load(Path(checkpoint)), str(checkpoint)
        else:
            auto = keys.witness_path(run.run_id)
            if auto.is_file():
                witness, witness_src = SignedCheckpoint.load(auto), str(auto)
        report = verify_ledger(run.ledger.connection, run.ledger.public_pem.encode(), run.run_id, witness)
        problems = list(report.problems)
        for issue in run.store.verify():
            problems.append(Problem(f"artifact {issue.digest}", issue.what))
        stored = set(run.store.digests())
        for digest, seq in sorted(report.referenced.items(), key=lambda kv: kv[1]):
            if digest not in stored:
                problems.append(Problem(f"artifact {digest}", f"referenced by event {seq} but missing from the store"))
        return RunReport(
            run_dir=str(path), run_id=run.run_id, ledger=report, artifacts=len(stored),
            unsigned_tail=max(0, report.events - report.last_checkpoint), witness=witness_src,
            seconds=time.perf_counter() - start, problems=problems,
        )
    finally:
        run.ledger.connection.close()
