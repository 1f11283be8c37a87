"""Chat format: a task that says chat is shown to the model through its own chat template.

The rendered task prompt becomes the user turn (`apply_chat_template(...,
add_generation_prompt=True)`), and a training completion is the assistant turn followed by
whatever the template closes a turn with, so a model trained here stops where the
evaluator's prompts expect it to. The sealed evaluator renders prompts with the same call
(it cannot import this module: it runs from its own copy), and a test checks that the two
agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rsi_master.runtime._errors import InvalidParameterError

if TYPE_CHECKING:
    from rsi_master.tasks import Task

__all__ = ["ChatFormat", "chat_format", "is_chat"]

_SENTINEL = "\x00rsi-master-completion\x00"


def is_chat(task: Task | None) -> bool:
    """A task is chat when it says so (`chat = True`, or `format = "chat"` as in task.toml)."""
    return getattr(task, "chat", False) is True or getattr(task, "format", None) == "chat"


@dataclass(frozen=True)
class ChatFormat:
    tokenizer: Any
    turn_end: str  # what the template writes after an assistant message's content

    def prompt(self, text: str) -> str:
        return str(
            self.tokenizer.apply_chat_template(
                [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
            )
        )

    def completion(self, text: str) -> str:
        return text + self.turn_end


def chat_format(tokenizer: Any) -> ChatFormat:
    if not getattr(tokenizer, "chat_template", None):
        raise InvalidParameterError("the task is in chat format but the model's tokenizer has no chat template")
    user = [{"role": "user", "content": "q"}]
    opening = tokenizer.apply_chat_template(user, tokenize=False, add_generation_prompt=True)
    full = tokenizer.apply_chat_template(
        [*user, {"role": "assistant", "content": _SENTINEL}], tokenize=False, add_generation_prompt=False
    )
    turn_end = ""
    # A template that renders the turn as the generation prompt continued holds the turn's end after
    # the content; one that does not (it rewrites earlier text) gets the tokenizer's eos from TRL.
    if full.startswith(opening) and _SENTINEL in full:
        turn_end = full[full.index(_SENTINEL) + len(_SENTINEL) :]
    return ChatFormat(tokenizer=tokenizer, turn_end=turn_end)
