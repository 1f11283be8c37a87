"""`verify`: recompute every hash, signature, root and artifact digest of a run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..artifacts import missing_members
from ..errors import RsiMasterError
from ..events import ArtifactPrune, typed
from ..ledger import KeyDir, LedgerReport, Problem, SignedCheckpoint, key_id, load_public_key, verify_ledger
from ._memo import VerifyMemo
from ._rundir import RunDir

__all__ = ["FINAL_KINDS", "RunReport", "verify_run"]

# Kinds of the record that ends a run, with the actor roles allowed to write it. Nothing may
# follow it: an event after it was recorded after the run's result was fixed.
FINAL_KINDS: dict[str, frozenset[str]] = {"orchestra.finish": frozenset({"harness"})}
_MAX_AFTER_FINAL = 10


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
    notes: list[str] = field(default_factory=list)

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
            "notes": list(self.notes),
            "seconds": round(self.seconds, 3),
        }


def _operator_witness(
    run: RunDir, keys: KeyDir, problems: list[Problem], notes: list[str]
) -> tuple[SignedCheckpoint | None, str | None]:
    """The key directory's witness for the run at this path, found through the key
    directory's own records first (the run id in the ledger is the agent's to edit), and
    the checks that ledger.pub is the operator's key for it."""
    ledger_key = key_id(load_public_key(run.ledger.public_pem.encode()))
    by_path = keys.record_at(run.path)
    if by_path is not None and by_path.run_id != run.run_id:
        problems.append(
            Problem(
                "run directory",
                f"the key directory has run {by_path.run_id} here, but the "
                f"ledger is run {run.run_id} (run directory replaced?)",
            )
        )
        return None, None
    record = by_path or keys.record(run.run_id)
    if record is None:
        if run.ledger.version < 2 and keys.witness_path(run.run_id).is_file():
            # Version-1 runs predate the records: their witness is found by run id alone.
            notes.append("version-1 run: the witness is found by run id, the key directory has no record")
            if not keys.has_key(ledger_key):
                problems.append(
                    Problem(
                        "ledger.pub", f"key {ledger_key} is not one of the operator's keys in {keys.path} (replaced?)"
                    )
                )
        else:
            problems.append(
                Problem(
                    "run",
                    f"the key directory {keys.path} has no record of run {run.run_id}: "
                    "nothing to check it against (pass --checkpoint FILE, an exported "
                    "checkpoint, or the operator's --key-dir)",
                )
            )
            return None, None
    else:
        if record.key_id != ledger_key:
            problems.append(
                Problem(
                    "ledger.pub",
                    f"key {ledger_key} differs from the operator's key for this run "
                    f"({record.key_id}, key directory {keys.path}): replaced?",
                )
            )
        if by_path is None:
            notes.append(
                f"run directory moved or copied: the key directory last saw run {run.run_id} at {record.run_dir}"
            )
    path = keys.witness_path(run.run_id)
    if not path.is_file():
        problems.append(Problem("witness", f"the operator's witness {path} is missing (deleted?)"))
        return None, None
    try:
        return SignedCheckpoint.load(path), str(path)
    except RsiMasterError as exc:
        problems.append(Problem("witness", str(exc)))
        return None, None


def _after_final(run: RunDir) -> list[Problem]:
    final = None
    for e in run.ledger.events(kinds=sorted(FINAL_KINDS)):
        if e.actor.role in FINAL_KINDS[e.kind]:
            final = e
            break
    if final is None:
        return []
    after = list(run.ledger.events(since=final.seq + 1, limit=_MAX_AFTER_FINAL + 1))
    out = [
        Problem(
            f"event {e.seq}",
            f"event after the run's final record (event {final.seq}, {final.kind}): "
            f"{e.kind} by {e.actor.role}/{e.actor.id}",
        )
        for e in after[:_MAX_AFTER_FINAL]
    ]
    if len(after) > _MAX_AFTER_FINAL:
        out.append(Problem(f"event {after[-1].seq}", "and more events after the run's final record"))
    return out


def _pruned(run: RunDir, notes: list[str]) -> list[Problem]:
    """Pruned directories must be the ones the harness recorded pruning (`artifact.prune`)."""
    recorded: dict[str, int] = {}

    for event in run.ledger.events(kinds=["artifact.prune"], role="harness"):
        for p in typed(event, ArtifactPrune).payload.pruned:
            recorded[p.checkpoint] = event.seq
    problems = []
    marked = run.store.pruned()
    for digest in marked:
        if digest not in recorded:
            problems.append(Problem(f"artifact {digest}", "pruned from the store without a recorded artifact.prune"))
    if recorded:
        seqs = sorted(set(recorded.values()))
        notes.append(
            f"{len(recorded)} checkpoint(s) pruned by the keep policy (event {', '.join(map(str, seqs))}); "
            "their manifests remain, their files are gone"
        )
    return problems


def verify_run(
    path: Path | str,
    *,
    key_dir: KeyDir | Path | str | None = None,
    checkpoint: Path | str | None = None,
    memo: VerifyMemo | None = None,
    ledger: str | None = None,
) -> RunReport:
    """Verify a run directory against a trust anchor outside it: an exported checkpoint
    (`checkpoint`, whose signature pins the run's key), else the operator key directory's
    record and witness of the run (a missing one is a problem). With `memo` (`memo_for(path)`
    in a process that verifies the run repeatedly), what an earlier call checked and is
    unchanged is not parsed or hashed again; the findings are the same."""
    if memo is None:
        return _verify_run(path, key_dir, checkpoint, None, ledger)
    with memo.lock:
        return _verify_run(path, key_dir, checkpoint, memo, ledger)


def _verify_run(
    path: Path | str,
    key_dir: KeyDir | Path | str | None,
    checkpoint: Path | str | None,
    memo: VerifyMemo | None,
    ledger: str | None = None,
) -> RunReport:
    start = time.perf_counter()
    keys = key_dir if isinstance(key_dir, KeyDir) else KeyDir(key_dir)
    run = RunDir.open(path, key_dir=keys, ledger=ledger)
    try:
        problems: list[Problem] = []
        notes: list[str] = []
        witness: SignedCheckpoint | None
        witness_src: str | None
        if checkpoint is not None:
            witness, witness_src = SignedCheckpoint.load(Path(checkpoint)), str(checkpoint)
        else:
            witness, witness_src = _operator_witness(run, keys, problems, notes)
        report = verify_ledger(
            run.ledger.connection,
            run.ledger.public_pem.encode(),
            run.run_id,
            witness,
            memo=memo.ledger if memo is not None else None,
        )
        problems = list(report.problems) + problems
        problems.extend(_after_final(run))
        scan = run.store.scan(memo.digests if memo is not None else None)
        for issue in scan.issues:
            problems.append(Problem(f"artifact {issue.digest}", issue.what))
        stored = set(scan.digests)
        # A directory known to the ledger whose tree and blobs were removed, its manifest kept,
        # passes the scan above (which checks what is there): look for what should be.
        for issue in missing_members(run.store, report.referenced, memo.digests if memo is not None else None):
            problems.append(Problem(f"artifact {issue.digest}", issue.what))
        for digest, seq in sorted(report.referenced.items(), key=lambda kv: kv[1]):
            if digest not in stored:
                problems.append(Problem(f"artifact {digest}", f"referenced by event {seq} but missing from the store"))
        problems.extend(_pruned(run, notes))
        return RunReport(
            run_dir=str(path),
            run_id=run.run_id,
            ledger=report,
            artifacts=len(stored),
            unsigned_tail=max(0, report.events - report.last_checkpoint),
            witness=witness_src,
            seconds=time.perf_counter() - start,
            problems=problems,
            notes=notes,
        )
    finally:
        run.ledger.connection.close()
