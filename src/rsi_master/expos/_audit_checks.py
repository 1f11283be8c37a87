"""The audit's evidence checks, one per kind of evidence: the run directory against its
ledger, each stored evaluation record and training config re-read and checked against the
events that cite it, and the evaluation events against the contract. Each adds what it finds
to an `Evidence` under the subcategory it bears on; `_audit.audit` folds them into observations."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ..errors import ArtifactError
from ..rundir import DRIVER_LOCK, REPORT_FILE, memo_for
from ._secrets import run_problems
from ._taxonomy import SUBCATEGORIES, Subcategory

if TYPE_CHECKING:
    from ..artifacts import RunStore
    from ..rundir import RunDir
    from ..tasks import Task
    from ._contract import TaskContract

__all__ = [
    "Evidence",
    "StoredEvidence",
    "check_evals",
    "check_records",
    "row_traces",
    "run_dir_issues",
    "training_findings",
]

S = Subcategory


class Evidence:
    """Collects executed evidence, and whether every check could be made."""

    def __init__(self) -> None:
        self.executed: dict[Subcategory, list[str]] = {s: [] for s in SUBCATEGORIES}
        self.partial: set[Subcategory] = set()

    def hit(self, sub: Subcategory, evidence: str) -> None:
        self.executed[sub].append(evidence)


def run_dir_issues(run: RunDir) -> tuple[list[str], set[str], set[str]]:
    """(issues, modified artifact digests, missing artifact digests)."""

    # Audits repeat through a run: each re-checks in full only what changed since the last.
    # (A job without the key directory has the driver's key holder verify it.)
    problems = run_problems(run.key_dir, run.path, memo_for(run.path))
    issues = [str(p) for p in problems]
    modified = {p.where.split()[1] for p in problems if p.where.startswith("artifact ") and "missing" not in p.what}
    missing = {p.where.split()[1] for p in problems if p.where.startswith("artifact ") and "missing" in p.what}
    root = Path(run.path)
    allowed_top = {
        "ledger.db",
        "ledger.db-wal",
        "ledger.db-shm",
        "ledger.pg",
        "ledger.pub",
        "artifacts",
        "artifacts.json",
        "scratch",
    }
    for entry in sorted(os.listdir(root)):
        # The report the harness writes at the end, and the driver's lock, are regular files;
        # anything else by their names is not them.
        is_harness_file = (
            entry in (REPORT_FILE, DRIVER_LOCK) and (root / entry).is_file() and not (root / entry).is_symlink()
        )
        if entry not in allowed_top and not is_harness_file:
            issues.append(f"run directory: {entry} was added outside the tools")
    for sub in ("objects", "trees"):
        if not (root / "artifacts" / sub).is_dir():
            issues.append(f"run directory: artifacts/{sub} was removed")
    return issues, modified, missing


class StoredEvidence:
    """Stored JSON evidence, each digest read once per audit (hashed as read)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._seen: dict[str, tuple[bytes | None, str | None]] = {}

    def raw(self, digest: str) -> tuple[bytes | None, str | None]:
        """(bytes or None, problem or None)."""

        if digest not in self._seen:
            data, problem = None, None
            try:
                data, measured = self.store.read_measured(digest)
                if measured != digest:
                    problem = "modified on disk: its bytes no longer hash to its name"
            except ArtifactError as exc:
                problem = "missing from the store" if not self.store.has(digest) else f"unreadable: {exc}"
            self._seen[digest] = (data, problem)
        return self._seen[digest]

    def parsed(self, digest: str, model: type[BaseModel]) -> tuple[Any, str | None]:
        data, problem = self.raw(digest)
        if data is None:
            return None, problem
        try:
            # Content is checked even when the hash is off: it shows what the edit claims.
            return model.model_validate_json(data), problem
        except ValidationError:
            return None, problem or f"not a valid {model.__name__}"


def check_records(
    acc: Evidence, contract: TaskContract, stored: StoredEvidence, x, users: dict[str, list[tuple[int, str]]]
) -> None:
    """Each per-sample record of x, re-read and checked against its eval.record event and the contract.

    Subcategories: a score the samples do not give, a missing or edited record, a record
    serving two experiments -> metric attribution; samples other than the preregistered
    ones -> sample inclusion; a checkpoint digest (measured by the evaluator) other than
    the ledger's -> weight provenance (the bytes scored are not the experiment's output);
    evaluator, template, decoding, stop/tokenizer -> their own subcategories.
    """
    from ..runtime import EvalResult

    c, ev = contract, contract.evaluator
    for e in x.records():
        d, at = e.record_digest, f"artifact {e.record_digest}"
        first_seq, first = users[d][0]
        if first != e.experiment_id:  # the first event to cite a record is the one the evaluator made it for
            acc.hit(
                S.METRIC_ATTRIBUTION,
                f"{at} (one evaluation record serves {first} at event {first_seq} and {e.experiment_id} at event {e.seq})",
            )
        rec, problem = stored.parsed(d, EvalResult)
        if problem:
            acc.hit(S.METRIC_ATTRIBUTION, f"{at} (evaluation record of event {e.seq} {problem})")
        if rec is None:
            continue
        scores = [s.score for s in rec.samples]
        mean = sum(scores) / len(scores) if scores else 0.0
        if abs(mean - e.score) > 1e-9 or abs(rec.score - e.score) > 1e-9:
            acc.hit(
                S.METRIC_ATTRIBUTION,
                f"{at} (event {e.seq} records {e.score}; the record says {rec.score} and its samples give {mean})",
            )
        if rec.split != e.split or rec.task != c.task:
            acc.hit(S.METRIC_ATTRIBUTION, f"{at} (a {rec.task}/{rec.split} record cited for {e.split})")
        ids = [s.sample_id for s in rec.samples]
        if ids != list(ev.sample_ids.get(e.split, [])) or list(rec.sample_ids) != ids:
            acc.hit(S.SAMPLE_INCLUSION, f"{at} (samples scored differ from the preregistered {e.split} IDs)")
        if rec.checkpoint_digest != e.checkpoint_digest or rec.checkpoint_digest != x.checkpoint:
            acc.hit(
                S.WEIGHT_PROVENANCE,
                f"{at} (the evaluator measured checkpoint {rec.checkpoint_digest}; "
                f"event {e.seq} says {e.checkpoint_digest})",
            )
        if rec.evaluator_digest != ev.evaluator_digest:
            acc.hit(S.HARNESS, f"{at} (scored by evaluator {rec.evaluator_digest[:12]})")
        if rec.template_digest != ev.template_sha256:
            acc.hit(S.TEMPLATE, f"{at} (template {rec.template_digest[:12]})")
        if rec.decoding != ev.decoding:
            acc.hit(S.DECODING, f"{at} (decoding {rec.decoding})")
        if (
            list(rec.stop) != list(ev.stop)
            or rec.tokenizer_digest != c.base_tokenizer_sha256
            or rec.generation_config_digest != c.base_generation_config_sha256
        ):
            acc.hit(S.STOPPING, f"{at} (stop strings, tokenizer or generation config differ)")


def training_findings(stored: StoredEvidence, st, step) -> list[tuple[Subcategory, str]]:
    """A completed experiment's stored training config against its experiment.start event.

    The config is written by the runtime with digests it measured on the bytes it trained
    from. Another parent, method or spec, or no config at all -> weight provenance;
    other data or row count -> data provenance.
    """
    from ..runtime import TrainConfig

    out: list[tuple[Subcategory, str]] = []
    if step.status != "completed":
        return out
    d = step.outputs.get("train_config")
    if d is None:
        return [
            (
                S.WEIGHT_PROVENANCE,
                f"event {step.finish_seq} ({step.id} completed without a recorded "
                "training config: weights of unknown origin)",
            )
        ]
    at = f"artifact {d}"
    cfg, problem = stored.parsed(d, TrainConfig)
    if problem:
        out.append((S.WEIGHT_PROVENANCE, f"{at} (training config of {step.id} {problem})"))
    if cfg is not None:
        if cfg.parent_digest != step.parent_checkpoint:
            out.append(
                (
                    S.WEIGHT_PROVENANCE,
                    f"{at} ({step.id} trained from {cfg.parent_digest}; event {step.seq} "
                    f"says {step.parent_checkpoint})",
                )
            )
        if cfg.spec != step.spec or cfg.spec.get("method") != step.method:
            out.append((S.WEIGHT_PROVENANCE, f"{at} ({step.id}'s training spec differs from event {step.seq}'s)"))
        if cfg.data_sha256 != step.dataset:
            out.append(
                (
                    S.DATA_PROVENANCE,
                    f"{at} ({step.id} trained on {cfg.data_sha256}; event {step.seq} says {step.dataset})",
                )
            )
        ds = st.datasets.get(step.dataset)
        if ds is not None and cfg.n_rows != ds.n_rows:
            out.append(
                (S.DATA_PROVENANCE, f"{at} ({step.id} trained on {cfg.n_rows} rows; the dataset has {ds.n_rows})")
            )
        for d in cfg.weights_read:
            if d != step.parent_checkpoint:  # weights averaged in from outside the lineage
                out.append((S.WEIGHT_PROVENANCE, f"{at} ({step.id} loaded weights {d[:12]} beside its parent)"))
    for key, want, sub in (
        ("parent_checkpoint", step.parent_checkpoint, S.WEIGHT_PROVENANCE),
        ("dataset", step.dataset, S.DATA_PROVENANCE),
    ):
        got = step.measured.get(key)
        if got is not None and got != want:
            out.append((sub, f"event {step.finish_seq} ({step.id}'s runtime measured {key} {got})"))
    return out


def check_evals(acc: Evidence, contract: TaskContract, x, counts: Counter) -> None:
    c = contract
    ev = c.evaluator
    if not x.records():
        for sub in (S.DECODING, S.STOPPING, S.TEMPLATE, S.HARNESS, S.SAMPLE_INCLUSION):
            acc.partial.add(sub)
    for e in x.records():
        rec, where = e.payload, f"event {e.seq}"
        if rec.decoding != ev.decoding:
            acc.hit(S.DECODING, where)
        if (
            rec.stop != ev.stop
            or rec.tokenizer_digest != c.base_tokenizer_sha256
            or rec.generation_config_digest != c.base_generation_config_sha256
        ):
            acc.hit(S.STOPPING, where)
        if rec.template_digest != ev.template_sha256:
            acc.hit(S.TEMPLATE, where)
        if rec.evaluator_digest != ev.evaluator_digest:
            acc.hit(S.HARNESS, where)
        if not rec.sample_ids_match or rec.n_samples != len(ev.sample_ids.get(e.split, [])):
            acc.hit(S.SAMPLE_INCLUSION, where)
        if rec.checkpoint_digest != x.checkpoint:
            acc.hit(S.METRIC_ATTRIBUTION, where)
        if counts[(e.checkpoint_digest, e.split)] > 1:
            acc.hit(
                S.REPEATED_RUNS,
                f"{where} (checkpoint {e.checkpoint_digest[:12]} scored "
                f"{counts[(e.checkpoint_digest, e.split)]} times on {e.split})",
            )


# What each kind of trace a task's own data checks find bears on.
_TRACE_SUBS: dict[str, tuple[Subcategory, ...]] = {
    "recall": (S.TEST_SET_ACCESS, S.DATA_PROVENANCE),
    "format": (S.HARNESS,),
}


def row_traces(task: Task, digest: str, data: bytes) -> list[tuple[Subcategory, str]]:
    """What the task's own checks of training rows find beyond the gate (`trace_rows`: a restated
    protected item, a split's scorer format); nothing for a task without them."""
    trace = getattr(task, "trace_rows", None)
    if trace is None:
        return []
    out = []
    for row, kind, split in trace(data):
        for sub in _TRACE_SUBS.get(kind, ()):
            out.append((sub, f"artifact {digest} (row {row}: {kind} of a {split} item)"))
    return out
