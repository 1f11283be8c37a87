"""Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp's
server, gateways) through the official `openai` SDK.

The SDK's own retries are off (`max_retries=0`): the agent loop retries with backoff and
records each failed attempt in the ledger.
"""

from __future__ import annotations

from typing import Any

from ..errors import RsiMasterError
from ._model import Completion, ProviderError, ToolCall

__all__ = ["OpenAIChatModel"]


def _retry_after(exc: Any) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return max(0.0, float(value)) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


class OpenAIChatModel:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        temperature: float | None = None,
        max_tokens_param: str = "max_tokens",
    ) -> None:
        try:
            import openai
        except ImportError:
            raise RsiMasterError("LLM agents need the openai package: pip install 'rsi-master[llm]'") from None
        self._openai = openai
        self.model = model
        self.temperature = temperature
        self.max_tokens_param = max_tokens_param
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, max_tokens: int, timeout: float, tag: str
    ) -> Completion:
        o = self._openai
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            self.max_tokens_param: max_tokens,
            "timeout": timeout,
        }
        if tools:
            kwargs["tools"] = tools
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        try:
            r = self.client.chat.completions.create(**kwargs)
        except o.APITimeoutError:
            raise ProviderError(f"no answer within {timeout:.1f}s", kind="timeout", retryable=True) from None
        except o.APIConnectionError as exc:
            raise ProviderError(f"connection failed: {exc}", kind="connection", retryable=True) from None
        except o.RateLimitError as exc:
            raise ProviderError(
                f"rate limited (HTTP 429): {exc.message}",
                kind="rate_limit",
                retryable=True,
                retry_after=_retry_after(exc),
            ) from None
        except (o.AuthenticationError, o.PermissionDeniedError) as exc:
            raise ProviderError(
                f"the endpoint refused the key (HTTP {exc.status_code}): {exc.message}", kind="auth", retryable=False
            ) from None
        except o.APIStatusError as exc:
            retry = exc.status_code in (408, 409) or exc.status_code >= 500
            raise ProviderError(
                f"HTTP {exc.status_code}: {exc.message}",
                kind="server" if retry else "bad_request",
                retryable=retry,
                retry_after=_retry_after(exc),
            ) from None
        except (o.APIResponseValidationError, ValueError) as exc:
            raise ProviderError(f"unreadable response: {exc}", kind="malformed", retryable=True) from None
        if not getattr(r, "choices", None):
            raise ProviderError("the response has no choices", kind="malformed", retryable=True)
        choice = r.choices[0]
        msg = choice.message
        calls = []
        for i, tc in enumerate(msg.tool_calls or []):
            fn = getattr(tc, "function", None)
            if fn is None:  # a custom (non-function) tool call: no tool of ours has that shape
                calls.append(ToolCall(tc.id or f"call_{i}", getattr(tc, "type", "?"), ""))
                continue
            calls.append(ToolCall(tc.id or f"call_{i}", fn.name or "", fn.arguments or ""))
        usage = getattr(r, "usage", None)
        return Completion(
            content=msg.content,
            tool_calls=calls,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=choice.finish_reason,
        )

    def close(self) -> None:
        self.client.close()
