"""Protected items: what no training row may contain, taken from a task's sealed splits."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...tasks import Split, Task

__all__ = ["PROTECTED_SPLITS", "ProtectedItem", "protected_items"]

# `dev` is protected too: Workers see aggregate dev scores, so training on dev items
# would inflate the number that drives their decisions.
PROTECTED_SPLITS: tuple[Split, ...] = ("dev", "review", "final")


@dataclass(frozen=True)
class ProtectedItem:
    """One evaluation item and the texts of it that training data must not contain.

    `texts` maps a kind (`prompt`, `question`, `reference`) to the text; every text is
    indexed on its own and a match names the kind it hit.
    """

    split: str
    sample_id: str
    texts: tuple[tuple[str, str], ...]


def _reference_text(reference: Any) -> str | None:
    if isinstance(reference, str):
        return reference
    if isinstance(reference, (dict, list)):
        return json.dumps(reference, sort_keys=True, separators=(",", ":"))
    return None  # a bare number is no evidence of anything on its own


def _question(template: str, prompt: str) -> str | None:
    head, sep, tail = template.partition("{question}")
    if not sep or not prompt.startswith(head) or not prompt.endswith(tail):
        return None
    return prompt[len(head) : len(prompt) - len(tail)]


def protected_items(task: Task, splits: Iterable[Split] = PROTECTED_SPLITS) -> list[ProtectedItem]:
    """The protected items of a task object (anything with `template` and `eval_items`).

    Besides the rendered prompt, the question alone is indexed (a training row may wrap
    it in another template) and so is the reference answer when it is text or JSON.
    """
    items: list[ProtectedItem] = []
    for split in splits:
        for item in task.eval_items(split):
            texts: list[tuple[str, str]] = [("prompt", item.prompt)]
            question = _question(task.template, item.prompt)
            if question is not None and question != item.prompt:
                texts.append(("question", question))
            reference = _reference_text(item.reference)
            if reference:
                texts.append(("reference", reference))
            items.append(ProtectedItem(split, item.sample_id, tuple(texts)))
    return items
