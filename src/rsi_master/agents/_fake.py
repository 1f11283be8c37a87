"""The offline model: scripted replies and tool calls, in the spirit of inspect_ai's `mockllm`.

A script holds, per role, queues of turns keyed by episode tag (`worker`, `reviewer`;
the Main's `start`, `finalize`, `review`, `idle`, `finish`; `*` for any). Each model call
takes the next turn of its episode's queue. A turn is JSON:

    {"content": "text", "tool_calls": [{"name": "data_generate", "arguments": {...}}]}
    {"tool_calls": [{"name": "data_generate", "raw_arguments": "{not json"}]}
    {"error": "rate_limit" | "timeout" | "server" | "auth"}

String values in `arguments` may hold `${...}` references, resolved against the
conversation so that a script can use what earlier tools returned: `last` (the latest
tool result), `results[i]` (every tool result so far), `brief` (the first JSON block of
the first user message). A string that is one reference becomes the referenced value
(a number stays a number). An exhausted queue answers with text and no tool call.
"""

from __future__ import annotations

import copy
import importlib
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import RsiMasterError
from ._model import Completion, ProviderError, ToolCall

__all__ = ["SMOKE_SCRIPT", "FakeModel", "load_script"]

SMOKE_SCRIPT = "smoke.json"  # shipped: drives all three roles through one small run
_REF = re.compile(r"\$\{([^}]+)\}")
_ERRORS = {"rate_limit": True, "timeout": True, "server": True, "connection": True, "auth": False, "bad_request": False}


def load_script(spec: str | None, role: str) -> dict[str, list[dict[str, Any]]]:
    """The role's section of a script: a JSON file, `module:ATTR`, or the shipped smoke script."""
    if spec and ":" in spec and not Path(spec).exists():
        module, attr = spec.split(":", 1)
        try:
            data = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise RsiMasterError(f"fake model script {spec}: {exc}") from None
    else:
        try:
            text = (
                Path(spec).read_text()
                if spec
                else resources.files(__package__).joinpath("scripts", SMOKE_SCRIPT).read_text()
            )
            data = json.loads(text)
        except FileNotFoundError:
            raise RsiMasterError(f"fake model script {spec} does not exist") from None
        except ValueError as exc:
            raise RsiMasterError(f"fake model script {spec}: not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get(role, {}), dict):
        raise RsiMasterError(f"fake model script {spec or SMOKE_SCRIPT}: expected {{role: {{episode: [turns]}}}}")
    section = data.get(role, {})
    for tag, turns in section.items():
        if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
            raise RsiMasterError(f"fake model script {spec or SMOKE_SCRIPT}: {role}.{tag} must be a list of turns")
    return copy.deepcopy(section)


def _path(root: dict[str, Any], expr: str) -> Any:
    tokens = re.findall(r"[^.\[\]]+|\[-?\d+\]", expr.strip())
    cur: Any = root
    for tok in tokens:
        if tok.startswith("["):
            cur = cur[int(tok[1:-1])]
        else:
            cur = cur[tok]
    return cur


def _resolve(value: Any, scope: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        return {k: _resolve(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, scope) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value

    def get(expr: str) -> Any:
        try:
            return _path(scope, expr)
        except (KeyError, IndexError, TypeError, ValueError):
            return None  # a script step that refers to nothing sends null: ExpOS says what is wrong

    whole = _REF.fullmatch(value)
    if whole:
        return get(whole.group(1))
    return _REF.sub(lambda m: str(get(m.group(1))), value)


def _scope(messages: list[dict[str, Any]]) -> dict[str, Any]:
    results = []
    for m in messages:
        if m.get("role") == "tool":
            try:
                results.append(json.loads(m.get("content") or ""))
            except ValueError:
                results.append({"error": m.get("content")})
    brief: Any = {}
    first = next((m for m in messages if m.get("role") == "user"), None)
    if first:
        block = re.search(r"```json\n(.*?)\n```", first.get("content") or "", re.S)
        if block:
            try:
                brief = json.loads(block.group(1))
            except ValueError:
                brief = {}
    return {"results": results, "last": results[-1] if results else {}, "brief": brief}


def _tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj, default=str)) // 4)


class FakeModel:
    def __init__(self, script: dict[str, list[dict[str, Any]]]) -> None:
        self.queues = {tag: list(turns) for tag, turns in script.items()}
        self.calls: list[dict[str, Any]] = []  # what it was sent (tests read it)

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, max_tokens: int, timeout: float, tag: str
    ) -> Completion:
        self.calls.append(
            {"tag": tag, "messages": copy.deepcopy(messages), "tools": [t["function"]["name"] for t in tools]}
        )
        queue = self.queues.get(tag) or self.queues.get("*") or []
        if not queue:
            return Completion(
                content=f"(fake model: no scripted turn left for {tag})",
                prompt_tokens=_tokens(messages),
                completion_tokens=8,
                finish_reason="stop",
            )
        turn = queue.pop(0)
        if "error" in turn:
            kind = str(turn["error"])
            raise ProviderError(f"fake {kind}", kind=kind, retryable=_ERRORS.get(kind, False), retry_after=0.0)
        scope = _scope(messages)
        calls = []
        for i, c in enumerate(turn.get("tool_calls", [])):
            raw = c["raw_arguments"] if "raw_arguments" in c else json.dumps(_resolve(c.get("arguments", {}), scope))
            calls.append(ToolCall(c.get("id", f"call_{len(self.calls)}_{i}"), c["name"], raw))
        content = turn.get("content")
        return Completion(
            content=content,
            tool_calls=calls,
            prompt_tokens=_tokens(messages),
            completion_tokens=_tokens([content, [c.arguments for c in calls]]),
            finish_reason="tool_calls" if calls else "stop",
        )

    def close(self) -> None:
        pass
