"""Task directories made in tests: one per scorer kind, small and valid unless told otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# kind -> (template, [scorer] table lines, item fields for index i)
KINDS: dict[str, tuple[str, str, Any]] = {
    "exact_match": (
        "Capital of {question}?\nAnswer:",
        'kind = "exact_match"',
        lambda i: {"question": f"country {i}", "answer": f"City{i}"},
    ),
    "numeric": (
        "Question: {question}\nAnswer:",
        'kind = "numeric"',
        lambda i: {
            "question": f"What is {i} plus {i + 1}?",
            "answer": f"{i} + {i + 1} = {2 * i + 1}\n#### {2 * i + 1}",
        },
    ),
    "regex": (
        "Word {question}:",
        'kind = "regex"\npattern = "ANSWER: *([a-z]+)"',
        lambda i: {"question": f"w{i}", "answer": "abc"[i % 3] * (i % 4 + 1)},
    ),
    "multiple_choice": (
        "{question}\n{choices}\nAnswer:",
        'kind = "multiple_choice"\nshuffle_seed = 7',
        lambda i: {
            "question": f"Which is number {i}?",
            "choices": [str(i), str(i + 100), str(i + 200), "none"],
            "answer": 0,
        },
    ),
    "unit_tests": (
        "Write f returning {question}.\n",
        'kind = "unit_tests"\ntimeout_s = 3.0',
        lambda i: {"question": f"x + {i}", "tests": [f"assert f(1) == {1 + i}", f"assert f(-{i}) == 0"]},
    ),
    "function_call": (
        "Call for: {question}\n",
        'kind = "function_call"',
        lambda i: {
            "question": f"weather in town {i}",
            "call": {"name": "weather", "arguments": {"town": f"t{i}", "days": i}},
        },
    ),
    "python": (
        "Say {question}:",
        'kind = "python"\npath = "scorer.py"\nfunction = "score"',
        lambda i: {"question": f"item {i}", "answer": f"yes{i}"},
    ),
}

PYTHON_SCORER = """
def score(item, output):
    if item["answer"] == "yes3":
        raise RuntimeError("this scorer breaks on item 3")
    return (1.0, "ok") if output.strip() == item["answer"] else 0.0
"""


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def make_task_dir(
    root: Path,
    kind: str = "exact_match",
    *,
    name: str | None = None,
    n: int = 4,
    train: int = 0,
    extra_toml: str = "",
    stop: tuple[str, ...] = ("\n",),
) -> Path:
    """A valid task directory of scorer `kind` with n items per protected split (ids s-0..)."""
    template, scorer, item = KINDS[kind]
    root.mkdir(parents=True, exist_ok=True)
    toml = (
        f"name = {json.dumps(name or kind.replace('_', '-'))}\n"
        f'capability = "a test task scored by {kind}"\n'
        f"template = {json.dumps(template)}\n"
        f"{extra_toml}"
        f"[generation]\nmax_new_tokens = 8\nstop = {json.dumps(list(stop))}\n"
        f"[scorer]\n{scorer}\n"
    )
    if train:
        toml += '[splits]\ntrain = "train.jsonl"\n'
    (root / "task.toml").write_text(toml)
    offset = {"dev": 0, "review": 100, "final": 200, "train": 300}
    for split in ("dev", "review", "final") + (("train",) if train else ()):
        count = train if split == "train" else n
        rows = [{"id": f"{split[0]}-{i}", **item(offset[split] + i)} for i in range(count)]
        write_jsonl(root / f"{split}.jsonl", rows)
    if kind == "python":
        (root / "scorer.py").write_text(PYTHON_SCORER)
    return root
