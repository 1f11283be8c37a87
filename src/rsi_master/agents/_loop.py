"""The agent loop: model turn, tool calls through ExpOS, observations back, bounded.

Bounds: turns (`max_steps`), tokens per node and per run, the node's deadline. A model's
mistake (arguments that are not JSON, an unknown tool, input that fails the schema, a
refused or failed action) goes back to it as an error it can correct, and is recorded;
every call of a known or unknown name goes through `ExpOS.call`, so its guards, role
checks and refusal records apply whatever the model sends. Provider errors are retried
with exponential backoff; when they persist the episode ends (the caller decides what
that means for the node). Framework faults (the ledger, the run's configuration) are
raised; an exception a tool did not anticipate is answered as the `expos` CLI answers
it, one line to the model, recorded on the step.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from .. import _clock
from ..events import AgentEnd, AgentError, AgentStep, Payload, typed
from ..expos import TOOLS, Caller, ExpOS, RunReader, Tool, ToolError, ToolFailed, ToolInvalid, ToolRefused
from ..orchestra import BudgetEnd
from ._config import LLMConfig
from ._memory import (
    MAX_CONTENT_CHARS,
    MAX_OBSERVATION_CHARS,
    ActionStep,
    Memory,
    NoteStep,
    TaskStep,
    ToolCallRecord,
    clip,
)
from ._model import ChatModel, Completion, ProviderError

__all__ = ["AgentLoop", "Outcome", "run_tokens"]

MAX_BACKOFF_S = 60.0


@dataclass
class Outcome:
    finished: bool
    reason: str  # finished, replied, step_limit, node_token_limit, run_token_limit, deadline, provider_error
    steps: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    result: BaseModel | None = None  # the finishing tool's result
    ok_calls: list[tuple[str, BaseModel]] = field(default_factory=list)  # (tool name, result) that succeeded
    error: str | None = None


def run_tokens(reader: RunReader, cache: dict[str, int]) -> int:
    """Tokens all agents of the run have spent, read incrementally from `agent.step` events."""
    total, since = cache.get("total", 0), cache.get("since", 0)
    for e in reader.ledger.events(kinds=("agent.step",), since=since):
        step = typed(e, AgentStep).payload
        total += step.prompt_tokens + step.completion_tokens
        since = e.seq + 1
    cache.update(total=total, since=since)
    return total


class AgentLoop:
    def __init__(
        self,
        *,
        model: ChatModel,
        config: LLMConfig,
        expos: ExpOS,
        caller: Caller,
        tools: list[Tool],
        finish: set[str],
        episode: str,
        deadline: float | None = None,
        stop_on_text: bool = False,
        prepare: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.model, self.cfg, self.expos, self.caller = model, config, expos, caller
        self.tools = {t.llm_name: t for t in tools}
        self.finish = finish
        self.episode = episode
        self.deadline = deadline
        self.stop_on_text = stop_on_text  # a text reply ends the episode (the Main's "nothing to add")
        self.prepare = prepare
        self.sleep = sleep or _clock.sleep  # the run's clock: a simulated run's retries spend simulated time
        self.schemas = [
            {
                "type": "function",
                "function": {
                    "name": t.llm_name,
                    "description": t.description,
                    "parameters": t.input.model_json_schema(),
                },
            }
            for t in tools
        ]
        self._run_cache: dict[str, int] = {}

    # -- the loop ------------------------------------------------------------------------
    def run(self, system: str, task: str) -> Outcome:
        memory = Memory(system=system, steps=[TaskStep(text=task)])
        out = Outcome(False, "step_limit")
        finish_names = ", ".join(sorted(t.llm_name for t in self.tools.values() if t.name in self.finish))
        pending: ActionStep | None = None  # a turn whose tool calls run: recorded even if the budget ends it
        try:
            for index in range(self.cfg.max_steps):
                stop = self._limit(out)
                if stop:
                    out.reason = stop
                    break
                t0 = _clock.now()  # the run's clock: a simulated run's turn takes its simulated retries
                try:
                    comp = self._complete(memory.messages(), index)
                except ProviderError as exc:
                    out.reason, out.error = "provider_error", str(exc)
                    break
                pending = step = self._step(comp, index, _clock.now() - t0, out)
                self._act(comp, step, out)
                memory.steps.append(step)
                pending = None
                self._record(AgentStep(episode=self.episode, **step.ledger_payload()))
                if out.finished:
                    break
                if not comp.tool_calls and self.stop_on_text:
                    out.reason = "replied"
                    break
                note = self._note(comp, index, finish_names)
                if note is not None:
                    memory.steps.append(NoteStep(text=note))
        except BudgetEnd:
            out.reason = "budget_end"  # mid-turn: what its tool calls did is in the ledger already
            if pending is not None:  # its tokens were spent: they count
                self._record(AgentStep(episode=self.episode, **pending.ledger_payload()))
            raise
        finally:
            self._record(
                AgentEnd(
                    episode=self.episode,
                    reason=out.reason,
                    finished=out.finished,
                    steps=out.steps,
                    tokens=out.tokens,
                    cost_usd=out.cost_usd,
                    error=out.error,
                )
            )
        return out

    def _step(self, comp: Completion, index: int, seconds: float, out: Outcome) -> ActionStep:
        """The turn's record (its tool calls are added as they run), counted in `out`."""
        step = ActionStep(
            index=index,
            content=clip(comp.content, MAX_CONTENT_CHARS),
            prompt_tokens=comp.prompt_tokens,
            completion_tokens=comp.completion_tokens,
            cost_usd=self.cfg.cost(comp.prompt_tokens, comp.completion_tokens),
            seconds=seconds,
            finish_reason=comp.finish_reason,
        )
        out.steps += 1
        out.tokens += comp.prompt_tokens + comp.completion_tokens
        out.cost_usd += step.cost_usd
        return step

    def _act(self, comp: Completion, step: ActionStep, out: Outcome) -> None:
        """Run the turn's tool calls in order, each recorded on `step`; a successful finishing call
        ends the episode, and the calls after it are recorded as skipped."""
        for tc in comp.tool_calls:
            if out.finished:
                step.tool_calls.append(
                    ToolCallRecord(
                        id=tc.id,
                        name=tc.name,
                        arguments=tc.arguments,
                        status="skipped",
                        observation="not run: the episode has finished",
                    )
                )
                continue
            rec, result = self._execute(tc.id, tc.name, tc.arguments)
            step.tool_calls.append(rec)
            known = self._known(tc.name)
            if rec.status == "ok" and result is not None and known is not None:
                name = self.tools[known].name
                out.ok_calls.append((name, result))
                if name in self.finish:
                    out.finished, out.reason, out.result = True, "finished", result

    def _note(self, comp: Completion, index: int, finish_names: str) -> str | None:
        """What the harness tells the model before its next turn: to act through the tools when it
        called none, and to finish when one turn is left."""
        if not comp.tool_calls:
            return f"No tool was called. You act only through the tools; finish with {finish_names}."
        if index == self.cfg.max_steps - 2:
            return f"One turn is left: call {finish_names} now."
        return None

    def _limit(self, out: Outcome) -> str | None:
        if out.tokens >= self.cfg.max_node_tokens:
            return "node_token_limit"
        if (
            self.cfg.max_run_tokens is not None
            and run_tokens(self.expos.reader, self._run_cache) >= self.cfg.max_run_tokens
        ):
            return "run_token_limit"
        if self.deadline is not None and self.deadline - _clock.now() < 1.0:
            return "deadline"
        return None

    # -- one request, with retries ---------------------------------------------------------
    def _complete(self, messages: list[dict[str, Any]], index: int) -> Any:
        attempt = 0
        while True:
            timeout = self.cfg.timeout_s
            if self.deadline is not None:
                timeout = max(1.0, min(timeout, self.deadline - _clock.now()))
            try:
                return self.model.complete(
                    messages, self.schemas, max_tokens=self.cfg.max_tokens_per_call, timeout=timeout, tag=self.episode
                )
            except ProviderError as exc:
                self._record(
                    AgentError(
                        episode=self.episode,
                        index=index,
                        attempt=attempt,
                        kind=exc.kind,
                        retryable=exc.retryable,
                        error=str(exc)[:500],
                    )
                )
                if not exc.retryable or attempt >= self.cfg.retries:
                    raise ProviderError(
                        f"{exc} (after {attempt + 1} attempt{'s' if attempt else ''})", kind=exc.kind, retryable=False
                    ) from None
                delay = min(MAX_BACKOFF_S, self.cfg.backoff_s * 2**attempt)
                if exc.retry_after is not None:
                    delay = min(MAX_BACKOFF_S, max(delay, exc.retry_after))
                if self.deadline is not None and self.deadline - _clock.now() < delay + 1.0:
                    raise ProviderError(f"{exc} (no time left to retry)", kind=exc.kind, retryable=False) from None
                self.sleep(delay)
                attempt += 1

    # -- one tool call -----------------------------------------------------------------------
    def _known(self, name: str) -> str | None:
        if name in self.tools:
            return name
        dotted = next((k for k, t in self.tools.items() if t.name == name), None)
        return dotted

    def _execute(self, call_id: str, name: str, raw: str) -> tuple[ToolCallRecord, BaseModel | None]:
        def rec(status: str, observation: str) -> ToolCallRecord:
            return ToolCallRecord(
                id=call_id,
                name=name,
                arguments=raw,
                status=status,  # type: ignore[arg-type]
                observation=clip(observation, MAX_OBSERVATION_CHARS) or "",
            )

        try:
            args = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            return rec(
                "malformed",
                f"error: the arguments of {name} are not valid JSON ({exc}); send one JSON "
                f"object that matches the tool's schema. You sent: {clip(raw, 300)}",
            ), None
        if not isinstance(args, dict):
            return rec(
                "malformed", f"error: the arguments of {name} must be a JSON object, not {type(args).__name__}"
            ), None
        known = self._known(name)
        if known is None:
            other = TOOLS.get(name) or next((t for t in TOOLS.values() if t.llm_name == name), None)
            if other is not None and self.caller.role in other.roles:
                return rec(
                    "unknown",
                    f"error: {name} is not offered in this episode; your tools: {', '.join(sorted(self.tools))}",
                ), None
            # Still through ExpOS: an unknown name is recorded as invalid, another role's tool
            # as a refused attempt (test-set access where the tool is protected).
            try:
                self.expos.call(self.caller, name, args)
            except ToolRefused as exc:
                return rec("refused", f"refused: {exc}. Your tools: {', '.join(sorted(self.tools))}"), None
            except ToolError as exc:
                return rec("unknown", f"error: {exc}. Your tools: {', '.join(sorted(self.tools))}"), None
            raise AssertionError(f"ExpOS ran {name} for {self.caller.role}, which may not call it")
        tool = self.tools[known]
        try:
            if self.prepare is not None:
                args = self.prepare(tool.name, args)
            result = self.expos.call(self.caller, tool.name, args)
        except ToolInvalid as exc:
            return rec("invalid", f"invalid input: {exc}"), None
        except ToolRefused as exc:
            return rec("refused", f"refused: {exc}"), None
        except ToolFailed as exc:
            return rec("failed", f"failed: {exc}"), None
        except BudgetEnd:
            raise
        except Exception as exc:
            # An input a tool did not anticipate (the `expos` CLI answers these with one line too):
            # the model is told and the node goes on; the step records it.
            return rec(
                "failed",
                f"failed: internal error in {tool.name}: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}",
            ), None
        return rec("ok", json.dumps(result.model_dump(mode="json"), sort_keys=True)), result

    def _record(self, payload: Payload) -> None:
        self.expos.record(self.caller, payload)
