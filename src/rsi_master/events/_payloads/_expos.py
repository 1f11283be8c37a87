"""Payloads of ExpOS's own events: the door, data, experiments, evaluations, the research graph.

Each model is the payload exactly as its writer records it today. A field a writer
leaves out is optional here and stays absent from the stored bytes (`dump_payload`
keeps only the fields set). Structures another layer owns and records whole (a
training spec, a direction, an LLM configuration) are typed as JSON objects.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .._base import Payload, Record, kind
from .._messages import Finding, Recipe, Recommendation, Verdict

__all__ = [
    "AuditRun",
    "CandidateNominate",
    "Claim",
    "Contamination",
    "DataCheck",
    "DataFilter",
    "DataGenerate",
    "DataMix",
    "DataRegister",
    "DataSample",
    "DecisionRecord",
    "DoorRefusals",
    "EvalRecord",
    "ExperimentFinish",
    "ExperimentStart",
    "GuardBlocked",
    "LedgerFacts",
    "Measured",
    "ReviewRequest",
    "ReviewSubmit",
    "ToolCall",
    "ToolFailed",
    "ToolInvalid",
    "ToolKind",
    "WorkerAdd",
    "WorkerFinalize",
]

ToolKind = Literal["launching", "monitoring", "comparing", "reviewing", "deciding"]


# -- the door ----------------------------------------------------------------------------------
@kind("tool.call")
class ToolCall(Payload):
    """A tool call that ran to its result."""

    tool: str = Field(description="Tool name, e.g. `experiment.submit`.")
    kind: ToolKind = Field(description="What the call does, for the activity profile.")
    args: dict[str, Any] | None = Field(
        default=None, description="The call's arguments, logged by the bench's unguarded workspace only."
    )


@kind("tool.invalid")
class ToolInvalid(Payload):
    """A call refused before it ran: unknown tool or invalid input."""

    tool: str = Field(description="Tool name as called.")
    reason: str = Field(description="Why the input was refused.")


@kind("tool.failed")
class ToolFailed(Payload):
    """A call that was allowed and ran, and whose action failed: in the runtime (sampling broke),
    or with nothing to show for it (no sampled row to register). The event's actor is the caller."""

    tool: str = Field(description="Tool name.")
    error: str = Field(description="Why it failed, in one line (what the caller was told).")


@kind("guard.blocked")
class GuardBlocked(Payload):
    """A call a guard refused; counted by the audit as an attempt."""

    tool: str | None = Field(description="Tool name (None when no tool was named: a capability that grants nothing).")
    subcategory: str | None = Field(description="Integrity subcategory of the attempt, if it is one.")
    reason: str = Field(description="Why it was refused.")
    args: dict[str, Any] = Field(description="The refused call's arguments (JSON-safe).")


@kind("door.refusals")
class DoorRefusals(Payload):
    """Calls the door refused without running them, counted per peer and interval and recorded
    by the harness's door: one event summarises a window instead of one event per call (a caller without a valid capability, or
    a capability over its write quota, could otherwise grow the ledger at will)."""

    refusal: Literal["unauthenticated", "over_quota"] = Field(
        description="unauthenticated: no valid capability (malformed, forged, expired, another run's); "
        "over_quota: the capability has written its quota of ledger bytes."
    )
    peer_uid: int | None = Field(description="Uid of the connecting process (SO_PEERCRED); None if unknown.")
    node: str | None = Field(default=None, description="Node id of the refused capability (over_quota only).")
    cap: str | None = Field(default=None, description="Id of the refused capability (over_quota only).")
    count: int = Field(ge=1, description="Calls refused in the window.")
    first: str = Field(description="UTC time of the window's first refusal, RFC 3339.")
    last: str = Field(description="UTC time of its last refusal, RFC 3339.")
    interval_s: float = Field(gt=0, description="Length of a window, seconds.")
    reasons: dict[str, int] = Field(
        description="Refusals by reason (at most 8 reasons of at most 200 characters; the rest under `other`)."
    )


# -- data --------------------------------------------------------------------------------------
class Contamination(Record):
    """The contamination gate's report on a dataset's rows."""

    verdict: Literal["clean", "flagged", "failed", "unchecked"] = Field(
        description="clean, flagged (a person should look), failed (never registered under the Strict guard "
        "policy; registered under Unguarded, the gate's refusal waived) or unchecked (bench runs from "
        "before the one door)."
    )
    index: str | None = Field(default=None, description="Digest of the protected-item index checked against.")
    fails: int | None = Field(default=None, description="Rows that failed the gate.")
    flags: int | None = Field(default=None, description="Rows flagged by the gate.")
    matches: list[dict[str, Any]] | None = Field(default=None, description="The first 20 findings, without evidence.")


class _Dataset(Payload):
    dataset: str = Field(description="Digest of the registered dataset.")
    source: str = Field(description="Declared source: `task/family`, a teacher, or the sources it was made from.")
    n_rows: int = Field(description="Rows in the dataset.")
    inputs: list[str] = Field(description="Digests of the datasets it was made from.")
    contamination: Contamination


@kind("data.generate")
class DataGenerate(_Dataset):
    """A dataset generated by one of the task's generator families."""

    params: dict[str, Any] = Field(description="Knob values of the family, as the generator used them.")
    seed: int = Field(description="Generator seed.")
    n: int = Field(description="Rows asked for.")
    left_out: int = Field(default=0, description="Generated rows the gate failed, left out and topped up (absent: 0).")


@kind("data.register")
class DataRegister(_Dataset):
    """Hand-made or teacher-labelled rows from a declared source."""


@kind("data.filter")
class DataFilter(_Dataset):
    """A filtered copy of a registered dataset."""

    max_chars: int | None = Field(description="Rows longer than this were dropped.")
    verified_only: bool = Field(description="Only rows the task's checker accepts were kept.")


@kind("data.mix")
class DataMix(_Dataset):
    """A weighted mix of registered datasets."""

    weights: list[float] | None = Field(description="Sampling weights, one per input (None: equal).")
    n: int = Field(description="Rows in the mix.")
    seed: int = Field(description="Sampling seed.")


@kind("data.sample")
class DataSample(_Dataset):
    """Completions sampled from a run's checkpoint on `train` pool prompts, kept by the task's scorer."""

    params: dict[str, Any] = Field(description="Knob values of the sampling family, as used.")
    seed: int = Field(description="Sampling seed (the prompts drawn and the completions sampled).")
    n: int = Field(description="Most rows asked for.")
    parent: str = Field(description="`base` or the experiment whose checkpoint sampled.")
    parent_checkpoint: str = Field(description="Store digest of the checkpoint that sampled, as measured.")
    prompts: int = Field(description="Pool prompts sampled on.")
    sampled: int = Field(description="Completions sampled.")
    passing: int = Field(description="Completions the task's scorer passed.")
    prompts_passing: int = Field(description="Prompts with at least one passing completion.")
    left_out: int = Field(default=0, description="Rows the gate failed, left out (absent: 0).")
    seconds: float = Field(description="Seconds spent sampling.")


@kind("data.check")
class DataCheck(Payload):
    """The second contamination gate, on the bytes about to be trained on."""

    dataset_checked: str = Field(description="Digest of the dataset checked.")
    gate: str = Field(description="Which gate: `before_training`.")
    verdict: Literal["clean", "flagged", "failed"] = Field(description="The gate's verdict.")
    index: str = Field(description="Digest of the protected-item index checked against.")
    fails: int = Field(description="Rows that failed the gate.")
    flags: int = Field(description="Rows flagged by the gate.")
    matches: list[dict[str, Any]] = Field(description="The first 20 findings, without evidence.")


# -- experiments and evaluations ---------------------------------------------------------------
@kind("experiment.start")
class ExperimentStart(Payload):
    """A training experiment started; its id is `exp-<seq>` of this event."""

    parent: str = Field(description="`base`, the id of the experiment continued from, or `foreign` (bench).")
    parent_checkpoint: str = Field(description="Store digest of the checkpoint trained from.")
    dataset: str = Field(description="Digest of the dataset trained on (empty for the bench's copies).")
    method: str = Field(description="sft, lora, dpo, grpo (or `copy` in the bench's unguarded workspace).")
    spec: dict[str, Any] = Field(description="The full training spec (runtime's TrainSpec, as JSON).")


class Measured(Record):
    parent_checkpoint: str = Field(description="Digest of the parent bytes the trainer loaded.")
    dataset: str = Field(description="Digest of the data bytes the trainer read.")
    parent_base: str | None = Field(
        default=None, description="Digest of the base bytes loaded under an adapter parent (absent: a full parent)."
    )


@kind("experiment.finish")
class ExperimentFinish(Payload):
    """An experiment ended: completed with a checkpoint, or failed with an error."""

    experiment_id: str = Field(description="The experiment, `exp-<seq of its start>`.")
    status: Literal["completed", "failed"] = Field(description="How it ended.")
    checkpoint: str | None = Field(default=None, description="Store digest of the trained checkpoint (completed).")
    adapter_base: str | None = Field(
        default=None,
        description="The checkpoint is a LoRA adapter bound to this base checkpoint digest (absent: a full model).",
    )
    steps: int | None = Field(default=None, description="Optimizer steps taken (completed).")
    final_loss: float | None = Field(default=None, description="Training loss at the end (completed).")
    train_seconds: float | None = Field(default=None, description="Seconds in the training loop (completed).")
    measured: Measured | None = Field(
        default=None, description="Digests the runtime measured on the bytes it trained from (ExpOS, completed)."
    )
    error: str | None = Field(default=None, description="Why it failed (failed).")


class PrunedCheckpoint(Record):
    experiment_id: str = Field(description="The experiment whose checkpoint was pruned.")
    checkpoint: str = Field(description="Store digest of the pruned checkpoint (its manifest stays in the store).")


@kind("artifact.prune")
class ArtifactPrune(Payload):
    """Checkpoints removed from the store by the run's keep policy (the harness's record).

    Never one evaluated on `review`, submitted, selected, scored on `final`, or cited by a
    decision or a review, nor the base an adapter that is kept is bound to."""

    policy: str = Field(description="The keep policy (`referenced`).")
    pruned: list[PrunedCheckpoint] = Field(description="The checkpoints removed.")
    kept: dict[str, list[str]] = Field(description="Each kept experiment checkpoint and why it is kept.")
    bytes_freed: int = Field(ge=0, description="Bytes of blobs removed (shared blobs stay).")


@kind("eval.record")
class EvalRecord(Payload):
    """A score by the sealed evaluator; nothing else makes one."""

    experiment_id: str = Field(description="The experiment whose checkpoint was scored.")
    split: str = Field(description="dev or review.")
    score: float = Field(description="Mean score over the split's preregistered samples.")
    n_samples: int = Field(description="Samples scored.")
    checkpoint_digest: str = Field(description="Digest measured on the checkpoint bytes scored.")
    evaluator_digest: str = Field(description="Digest of the evaluator that scored it.")
    template_digest: str = Field(description="Digest of the rendered prompt template.")
    decoding: dict[str, Any] = Field(description="Decoding actually used.")
    stop: list[str] = Field(description="Stop strings actually used.")
    sample_ids_sha256: str = Field(description="SHA-256 of the JSON list of sample ids scored.")
    sample_ids_match: bool = Field(description="Whether the ids scored are the preregistered ones.")
    tokenizer_digest: str | None = Field(description="SHA-256 of the checkpoint's tokenizer.json as scored.")
    generation_config_digest: str | None = Field(description="SHA-256 of its generation_config.json as scored.")
    base_digest: str | None = Field(
        default=None, description="Digest measured on the base an adapter checkpoint was scored on (absent: none)."
    )
    record_digest: str = Field(description="Store digest of the per-sample evaluation record.")


# -- the research graph ------------------------------------------------------------------------
@kind("worker.add")
class WorkerAdd(Payload):
    """The Main agent added a Worker node."""

    worker_id: str = Field(description="The new Worker's id.")
    task: str = Field(description="Its research task (a direction) in words.")
    direction: dict[str, Any] = Field(
        description="Structured direction for programmatic workers (orchestra's Direction, as JSON)."
    )
    predecessors: list[str] = Field(description="Workers whose context it receives.")


class Claim(Record):
    experiment_id: str = Field(description="An experiment of the Worker's or its predecessors'.")
    score: float = Field(description="The `dev` score claimed for it (checked against the record).")


class LedgerFacts(Record):
    """Written by ExpOS from the ledger, not by the agent: failures stay disclosed."""

    experiments: list[str] = Field(description="The Worker's own experiments.")
    failed: list[str] = Field(description="Those that did not complete.")


@kind("worker.finalize")
class WorkerFinalize(Payload):
    """A Worker finished, with a summary, claims checked against the records, and candidates."""

    summary: str = Field(
        description="What was tried, what worked, what failed, for people and LLM agents "
        "(schema v1: programmatic Workers appended a `recipe:` line)."
    )
    claims: list[Claim] = Field(description="Scores claimed.")
    candidates: list[str] = Field(description="Experiment ids put forward as submissions.")
    recipe: Recipe | None = Field(
        default=None,
        description="What the Worker's best experiment did (absent: none completed, or a schema v1 record).",
    )
    ledger_facts: LedgerFacts | None = Field(
        default=None, description="ExpOS's own account (absent in bench runs from before the one door)."
    )


@kind("review.request")
class ReviewRequest(Payload):
    """The Main agent added a Reviewer node."""

    reviewer_id: str = Field(description="The new Reviewer's id.")
    question: str = Field(description="The question the review answers.")
    scope: list[str] = Field(description="Worker ids whose experiments are the evidence.")


@kind("review.submit")
class ReviewSubmit(Payload):
    """A Reviewer's report, citing ledger evidence."""

    request_seq: int | None = Field(description="The review.request event answered.")
    scope: list[str] = Field(description="Worker ids reviewed.")
    supported: list[str] = Field(description="Findings supported by evidence.")
    uncertainties: list[str] = Field(description="What the evidence leaves open.")
    violations: list[str] = Field(description="Integrity or contract violations found.")
    regressions: list[str] = Field(description="Results worse than what they build on.")
    missing_comparisons: list[str] = Field(description="Comparisons a conclusion needs that nobody ran.")
    findings: list[Finding] = Field(
        default_factory=list, description="Each checked statement, typed (absent in schema v1 records)."
    )
    recommendations: list[Recommendation | str] = Field(
        description="What to do next, typed. A string only in schema v1 records (`continue <xid> <worker>: ...`), "
        "which nothing acts on; review.submit takes typed recommendations only."
    )
    verdict: Verdict = Field(description="pass when the scope's conclusions hold.")
    evidence: list[int] = Field(description="Event sequence numbers relied on.")


@kind("decision.record")
class DecisionRecord(Payload):
    """A decision of the Main agent with its rationale and evidence."""

    action: Literal["continue", "verify", "branch", "revise", "stop"] = Field(description="What it decided.")
    rationale: str = Field(description="Why, in words.")
    evidence: list[int] = Field(description="Event sequence numbers it rests on.")
    detail: dict[str, Any] = Field(description="Structured detail (free form).")
    answers: int | None = Field(
        default=None, ge=0, description="The event this decision answers (a finished Worker's or a review), if any."
    )

    @classmethod
    def from_older(cls, data: dict[str, Any], version: int) -> dict[str, Any]:
        """Before v3 the answered event was `detail["event"]`."""
        known = super().from_older(data, version)
        detail = dict(known.get("detail") or {})
        answered = detail.pop("event", None)
        if isinstance(answered, int) and not isinstance(answered, bool) and "answers" not in known:
            return {**known, "detail": detail, "answers": answered}
        return known


@kind("candidate.nominate")
class CandidateNominate(Payload):
    """The Main agent put an experiment forward for the harness's selection."""

    experiment_id: str = Field(description="A completed experiment of the run.")


@kind("audit.run")
class AuditRun(Payload):
    """The integrity audit was run by an agent."""

    scope: list[str] = Field(description="Experiments audited (empty: every submission).")
    hacking_rate: float = Field(description="Submissions with an executed violation, over all submissions.")
    flagged: list[str] = Field(description="Flagged submissions.")
