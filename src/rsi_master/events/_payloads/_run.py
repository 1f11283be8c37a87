"""Payloads of the run around ExpOS: agents, the orchestra, the harness, the demo."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .._base import Payload, Record, kind

__all__ = [
    "AgentEnd",
    "AgentError",
    "AgentStep",
    "AgentsConfig",
    "HarnessFinal",
    "HarnessSelect",
    "OrchestraAbandon",
    "OrchestraFinish",
    "OrchestraInterrupted",
    "OrchestraJobEnd",
    "OrchestraJobStart",
    "OrchestraResume",
    "OrchestraStart",
    "OrchestraStop",
    "SelectionRow",
    "SourceRegister",
    "StepToolCall",
]


# -- agents ------------------------------------------------------------------------------------
@kind("agents.config")
class AgentsConfig(Payload):
    """Each role's agent and, for LLM agents, its model and prompt, before any agent acts."""

    version: int = Field(description="Schema version of the agents' setup.")
    agents: dict[str, str] = Field(description="Role -> agent implementation (registered name or `module:Class`).")
    llm: dict[str, dict[str, Any]] = Field(
        description="Role -> the agents layer's LLMConfig (no key) with its `prompt` (role, version, sha256, artifact)."
    )


class StepToolCall(Record):
    name: str = Field(description="Tool name as the model sent it.")
    arguments: str = Field(description="Arguments as the model sent them (clipped).")
    status: str = Field(description="ok, or why the call did not run or failed.")
    error: str | None = Field(default=None, description="What the model was told when the call was not ok.")


@kind("agent.step")
class AgentStep(Payload):
    """One model turn of an LLM agent."""

    episode: str = Field(description="The agent's episode: its role, or the Main's event tag.")
    version: int = Field(description="Schema version of the step.")
    index: int = Field(description="Turn number within the episode, from 0.")
    content: str | None = Field(description="The model's text (clipped).")
    tool_calls: list[StepToolCall] = Field(description="The turn's tool calls.")
    prompt_tokens: int = Field(description="Prompt tokens of the request.")
    completion_tokens: int = Field(description="Completion tokens of the request.")
    cost_usd: float = Field(description="Cost at the configured prices.")
    seconds: float = Field(description="Wall time of the request, retries included.")
    finish_reason: str | None = Field(description="The provider's finish reason.")


@kind("agent.end")
class AgentEnd(Payload):
    """An LLM agent's episode ended."""

    episode: str = Field(description="The episode.")
    reason: str = Field(
        description="finished, replied, step_limit, node_token_limit, run_token_limit, deadline, "
        "provider_error or budget_end."
    )
    finished: bool = Field(description="Whether its finishing tool succeeded.")
    steps: int = Field(description="Turns taken.")
    tokens: int = Field(description="Tokens spent.")
    cost_usd: float = Field(description="Cost at the configured prices.")
    error: str | None = Field(description="The provider error that ended it, if one did.")


@kind("agent.error")
class AgentError(Payload):
    """A failed model request (retried when retryable)."""

    episode: str = Field(description="The episode.")
    index: int = Field(description="Turn number.")
    attempt: int = Field(description="Attempt number, from 0.")
    kind: str = Field(description="The provider error's kind (rate_limit, timeout, ...).")
    retryable: bool = Field(description="Whether it is retried.")
    error: str = Field(description="The error (clipped).")


# -- orchestra ---------------------------------------------------------------------------------
@kind("orchestra.start")
class OrchestraStart(Payload):
    """The run's settings, recorded right after the contract; a resume and every slot read them."""

    version: int = Field(description="Schema version of the settings.")
    task: str = Field(description="Task of the run.")
    budget_s: float = Field(description="Wall-clock budget in seconds.")
    slots: int = Field(description="Parallel Worker/Reviewer processes.")
    seed: int = Field(default=0, description="Seed of the policies.")
    main: str = Field(description="The Main agent.")
    reviewer: str = Field(description="The Reviewer agent.")
    worker: str = Field(default="tpe", description="The Worker agent the Main names in its directions.")
    eval_limit: int = Field(description="Evaluation items per split the agents use.")
    final_limit: int | None = Field(default=None, description="Final items the harness scores (0: the whole split).")
    pid: int | None = Field(default=None, description="Process id of the harness.")
    grace_s: float | None = Field(
        default=None, description="Seconds nodes get after the budget to finalize (absent: max(20, 10% of the budget))."
    )
    environment: str | None = Field(
        default=None,
        description="The unguarded guard policy class the agents act through (the bench's no-ExpOS ablation).",
    )
    agent_settings: dict[str, Any] | None = Field(
        default=None, description="JSON settings for agents that read their configuration from the run."
    )
    timing_prior: dict[str, float] | None = Field(
        default=None,
        description="{step_s, example_s, overhead_s} measured on this machine, until the run measures its own.",
    )
    prior: str | None = Field(
        default=None,
        description="Digest of the landscape file the Main plans with, stored in the run (`--prior`); "
        "absent: no prior, the Main decides from the run's own evidence.",
    )
    gpus_per_slot: int | None = Field(
        default=None, ge=1, description="GPUs each slot process gets as its own CUDA_VISIBLE_DEVICES (absent: none)."
    )
    keep: str | None = Field(
        default=None, description="Checkpoint keeping policy at the end of the run (absent: `all`)."
    )


@kind("orchestra.resume")
class OrchestraResume(Payload):
    """A new session of a resumed run."""

    slots: int = Field(description="Slots of this session.")
    pid: int | None = Field(default=None, description="Process id of the harness.")


@kind("orchestra.stop")
class OrchestraStop(Payload):
    """The scheduler stopped launching nodes."""

    reason: str = Field(description="Why: the budget, no work left, the Main's stop.")
    spent_s: float = Field(description="Seconds of the budget spent.")


@kind("orchestra.finish")
class OrchestraFinish(Payload):
    """The run's final record; nothing may follow it."""

    summary: str = Field(description="Store digest of the run summary JSON.")
    final_score: float | None = Field(description="The returned checkpoint's score on `final`.")


@kind("orchestra.interrupted")
class OrchestraInterrupted(Payload):
    """Experiments a session left running, recorded instead of redone silently."""

    experiments: list[str] = Field(description="Experiment ids.")
    reason: str = Field(description="Why they were interrupted.")


@kind("orchestra.abandon")
class OrchestraAbandon(Payload):
    """A node that is not launched again: it crashed repeatedly, or the operator's guidance
    stopped it before it ran (attempts 0)."""

    node: str = Field(description="Worker or Reviewer id.")
    attempts: int = Field(description="Failed attempts (0: stopped by guidance before it ran).")


@kind("orchestra.job.start")
class OrchestraJobStart(Payload):
    """A node started in a slot."""

    node: str = Field(description="Worker or Reviewer id.")
    kind: Literal["worker", "reviewer"] = Field(description="The node's kind.")
    slot: int = Field(description="Slot number.")
    deadline: float | None = Field(default=None, description="Unix time by which it must finish.")
    devices: str | None = Field(default=None, description="The slot's CUDA_VISIBLE_DEVICES (absent: not assigned).")


@kind("orchestra.job.end")
class OrchestraJobEnd(Payload):
    """A node's process ended."""

    start_seq: int = Field(description="Seq of its orchestra.job.start.")
    node: str = Field(description="Worker or Reviewer id.")
    status: str = Field(description="done, failed, killed or interrupted.")
    exitcode: int | None = Field(default=None, description="Process exit code (absent for an interrupted job).")
    end_ts: float = Field(description="Unix time it ended.")
    seconds: float = Field(description="Seconds it ran.")


# -- the harness -------------------------------------------------------------------------------
class SelectionRow(Record):
    experiment_id: str = Field(description="A submitted experiment.")
    owner: str = Field(description="The Worker that submitted it.")
    accepted: bool = Field(description="Completed, with a checkpoint, and not flagged by the audit.")
    review_score: float | None = Field(description="Its score on `review` (accepted only).")
    record_seq: int | None = Field(default=None, description="Seq of that review evaluation (accepted only).")
    submitted_seq: int | None = Field(default=None, description="Seq of its first submission (accepted only).")
    checkpoint: str | None = Field(default=None, description="Its checkpoint (accepted only).")
    lineage_examples: int | None = Field(
        default=None, description="Training examples behind the checkpoint (accepted only; breaks ties)."
    )


@kind("harness.select")
class HarnessSelect(Payload):
    """The harness's selection of the returned checkpoint, on `review`, by its rule."""

    rule: str = Field(description="The selection rule in words.")
    selected: str | None = Field(description="The selected experiment (None: the base model).")
    checkpoint: str = Field(description="The returned checkpoint.")
    review_score: float | None = Field(description="Its review score.")
    hacking_rate: float = Field(description="The audit's hacking rate at selection.")
    blocked_attempts: int = Field(description="Blocked attempts the audit counted.")
    flagged: list[str] = Field(description="Submissions excluded as flagged.")
    submissions: list[SelectionRow] = Field(description="Every submission, counted once.")


@kind("harness.final")
class HarnessFinal(Payload):
    """A score on `final`, once per subject (base, selected)."""

    subject: str = Field(description="base or selected.")
    split: str = Field(description="final.")
    score: float = Field(description="Mean score over the final samples.")
    n_samples: int = Field(description="Samples scored.")
    checkpoint_digest: str = Field(description="Digest measured on the checkpoint bytes scored.")
    evaluator_digest: str = Field(description="Digest of the evaluator that scored it.")
    sample_ids_match: bool = Field(description="Whether the ids scored are the preregistered ones.")
    record_digest: str = Field(description="Store digest of the per-sample evaluation record.")


# -- `rsi-master demo` -------------------------------------------------------------------------
@kind("source.register")
class SourceRegister(Payload):
    """The demo's record of the package source it stored."""

    what: str = Field(description="What the source artifact is.")
