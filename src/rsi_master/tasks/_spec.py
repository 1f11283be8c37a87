"""The evaluator spec of a task, for pinning in a task contract.

Everything that decides a score is here as data or as a digest: the template, the
decoding, the stop strings, the sample IDs per split, a digest of the sealed items
(so a contract can pin them without revealing them), and a digest of the task
package's source files (the checker, the interpreter, the item generators).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ._protocol import SPLITS, Task

__all__ = ["SPEC_VERSION", "generators_spec", "items_digest", "source_digest", "task_source_files", "task_spec"]

SPEC_VERSION = 1
_PACKAGE_DIR = Path(__file__).resolve().parent


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def task_source_files() -> tuple[Path, ...]:
    """Every Python source of the task package, sorted.

    All tasks share the base class, text helpers and protocol, so the whole package is
    the evaluator code of any one task (task directories' code, `_dir/`, included); pinning
    less would miss shared behaviour.
    """
    return tuple(sorted(p for p in _PACKAGE_DIR.rglob("*.py") if "__pycache__" not in p.parts))


def _rel(path: Path) -> str:
    return path.relative_to(_PACKAGE_DIR).as_posix()


def source_digest() -> str:
    """SHA-256 over sorted `name digest` lines of the package sources (a manifest digest)."""
    lines = [f"{_rel(path)} {_sha256(path.read_bytes())}\n" for path in task_source_files()]
    return _sha256("".join(lines).encode("utf-8"))


def items_digest(task: Task, split: str) -> str:
    """SHA-256 of the canonical JSON of a split's sealed items (IDs, prompts, references)."""
    records = [
        {"sample_id": item.sample_id, "prompt": item.prompt, "reference": item.reference}
        for item in task.eval_items(split)  # type: ignore[arg-type]
    ]
    return _sha256(json.dumps(records, sort_keys=True, separators=(",", ":")).encode("utf-8"))


def generators_spec(task: Task) -> dict[str, Any]:
    """The generator families of `task` and their knobs as JSON (for CLIs and agent tools)."""
    return {
        family.name: {
            "description": family.description,
            "knobs": [asdict(knob) | {"choices": list(knob.choices)} for knob in family.knobs],
        }
        for family in task.generators().values()
    }


def task_spec(task: Task) -> dict[str, Any]:
    """A JSON-able description of the evaluator of `task`, free of protected content."""
    return {
        "version": SPEC_VERSION,
        "name": task.name,
        "capability": task.capability,
        "template": task.template,
        "template_sha256": _sha256(task.template.encode("utf-8")),
        "decoding": asdict(task.decoding),
        "stop": list(task.stop),
        "eval_params": dict(getattr(task, "eval_params", {})),
        "sample_ids": {split: [item.sample_id for item in task.eval_items(split)] for split in SPLITS},
        "items_sha256": {split: items_digest(task, split) for split in SPLITS},
        # Package-relative names: the spec must be the same on every machine.
        "source_files": [f"rsi_master/tasks/{_rel(path)}" for path in task_source_files()],
        "source_sha256": source_digest(),
    }
