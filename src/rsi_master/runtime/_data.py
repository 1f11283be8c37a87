"""Data operations: generate, filter, mix, deduplicate. Each writes one JSONL file.

Rows carry `prompt` and `completion` (what SFT trains on), `check` (what the task's
reward needs for GRPO and for verification), plus provenance (`task`, `family`, `id`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rsi_master.runtime._digest import sha256_file
from rsi_master.runtime._errors import InvalidParameterError
from rsi_master.runtime._jsonl import read_jsonl, write_jsonl
from rsi_master.runtime._records import DataResult
from rsi_master.runtime._tasks import check_params, get_family, get_task

if TYPE_CHECKING:
    from rsi_master.tasks import Task

MAX_ROWS = 1_000_000  # a guard against typos like n=10**9 that would fill the disk


def _finish(op: str, path: Path, n: int, spec: dict[str, Any], store: Any) -> DataResult:
    digest = store.put_file(path) if store is not None else None
    return DataResult(op=op, path=str(path), n_rows=n, sha256=sha256_file(path), digest=digest, spec=spec)


def _check_n(n: Any, what: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise InvalidParameterError(f"{what} must be an integer, got {n!r}")
    if n < 1 or n > MAX_ROWS:
        raise InvalidParameterError(f"{what} must be in [1, {MAX_ROWS}], got {n}")
    return n


def generate(
    task: Task | str,
    family: str,
    params: dict[str, Any] | None,
    seed: int,
    n: int,
    out_path: str | Path,
    store: Any = None,
) -> DataResult:
    """Run one generator family of a task and write `n` examples."""
    rows, spec = generate_rows(task, family, params, seed, n)
    path = Path(out_path)
    count = write_jsonl(path, rows)
    return _finish("generate", path, count, spec, store)


def generate_rows(
    task: Task | str, family: str, params: dict[str, Any] | None, seed: int, n: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows `generate` writes, and its spec (task, family, full params, seed, n)."""
    task_obj = get_task(task)
    fam = get_family(task_obj, family)
    full_params = check_params(fam, dict(params or {}))
    _check_n(n)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InvalidParameterError(f"seed must be an integer, got {seed!r}")
    examples = fam.generate(full_params, seed, n)
    rows = []
    for i, ex in enumerate(examples):
        if "prompt" not in ex or "completion" not in ex:
            raise InvalidParameterError(f"generator {family!r} produced an example without prompt/completion")
        row = dict(ex)
        row.setdefault("check", {})
        row.update(task=task_obj.name, family=family, id=f"{task_obj.name}/{family}/{seed}/{i}")
        rows.append(row)
    return rows, {"task": task_obj.name, "family": family, "params": full_params, "seed": seed, "n": n}


def _eval_prompts(task_obj: Any) -> set[str]:
    return {item.prompt for split in ("dev", "review", "final") for item in task_obj.eval_items(split)}


def filter_data(
    in_path: str | Path,
    out_path: str | Path,
    *,
    max_chars: int | None = None,
    verified_only: bool = False,
    drop_eval_overlap: bool = True,
    exclude_regex: str | None = None,
    store: Any = None,
    task: Task | None = None,
) -> DataResult:
    """Keep rows that pass every criterion.

    `verified_only` keeps rows whose completion the task's own checker accepts (reward 1);
    `drop_eval_overlap` removes rows whose prompt equals a sealed evaluation prompt
    (decontamination; on by default because a leak would make every score meaningless).
    `task` is the task object for rows that name it (a run's own: a task directory's sealed
    copy, a simulated task); rows naming another task use the built-in suite's.
    """
    if max_chars is not None and (isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1):
        raise InvalidParameterError(f"max_chars must be a positive integer, got {max_chars!r}")
    pattern = None
    if exclude_regex is not None:
        try:
            pattern = re.compile(exclude_regex)
        except re.error as exc:
            raise InvalidParameterError(f"exclude_regex is not a valid regex: {exc}") from exc
    rows = read_jsonl(in_path)
    tasks: dict[str, Any] = {}
    banned: dict[str, set[str]] = {}
    kept = []
    for row in rows:
        text = row["prompt"] + row["completion"]
        if max_chars is not None and len(text) > max_chars:
            continue
        if pattern is not None and pattern.search(text):
            continue
        if verified_only or drop_eval_overlap:
            name = row.get("task")
            if name is None:
                raise InvalidParameterError("rows without a 'task' field cannot be verified or decontaminated")
            if name not in tasks:
                tasks[name] = task if task is not None and name == getattr(task, "name", None) else get_task(name)
                banned[name] = _eval_prompts(tasks[name]) if drop_eval_overlap else set()
            if drop_eval_overlap and row["prompt"] in banned[name]:
                continue
            if verified_only and tasks[name].reward(row, row["completion"]) < 1.0:
                continue
        kept.append(row)
    path = Path(out_path)
    n = write_jsonl(path, kept)
    spec = {
        "input_sha256": sha256_file(in_path),
        "max_chars": max_chars,
        "verified_only": verified_only,
        "drop_eval_overlap": drop_eval_overlap,
        "exclude_regex": exclude_regex,
        "n_in": len(rows),
    }
    return _finish("filter", path, n, spec, store)


def mix(
    inputs: Sequence[str | Path],
    weights: Sequence[float] | None,
    n: int,
    seed: int,
    out_path: str | Path,
    store: Any = None,
) -> DataResult:
    """Sample `n` rows from several datasets in proportion to `weights`, then shuffle.

    Each source is sampled without replacement while it lasts and cycled after, so a
    small source with a big weight is repeated rather than silently under-weighted.
    """
    _mix_weights(len(inputs), weights, n)  # before reading anything
    out, w, counts = mix_rows([read_jsonl(p) for p in inputs], weights, n, seed, [str(p) for p in inputs])
    path = Path(out_path)
    count = write_jsonl(path, out)
    spec = {"inputs_sha256": [sha256_file(p) for p in inputs], "weights": w, "counts": counts, "n": n, "seed": seed}
    return _finish("mix", path, count, spec, store)


def _mix_weights(inputs: int, weights: Sequence[float] | None, n: int) -> list[float]:
    if not inputs:
        raise InvalidParameterError("mix needs at least one input")
    _check_n(n)
    w = [1.0] * inputs if weights is None else [float(x) for x in weights]
    if len(w) != inputs:
        raise InvalidParameterError(f"got {inputs} inputs but {len(w)} weights")
    if any(x < 0 for x in w) or sum(w) <= 0:
        raise InvalidParameterError(f"weights must be non-negative with a positive sum, got {w}")
    return w


def mix_rows(
    sources: Sequence[list[dict[str, Any]]],
    weights: Sequence[float] | None,
    n: int,
    seed: int,
    names: Sequence[str],
) -> tuple[list[dict[str, Any]], list[float], list[int]]:
    """The rows `mix` writes for sources already read (`names`: theirs, for errors), the
    weights and the rows drawn from each source."""
    w = _mix_weights(len(sources), weights, n)
    rng = random.Random(seed)
    for name, rows in zip(names, sources, strict=True):
        if not rows:
            raise InvalidParameterError(f"mix input {name} is empty")
    # Largest-remainder allocation so counts add up to n exactly.
    total = sum(w)
    quotas = [n * x / total for x in w]
    counts = [int(q) for q in quotas]
    for i in sorted(range(len(w)), key=lambda i: quotas[i] - counts[i], reverse=True)[: n - sum(counts)]:
        counts[i] += 1
    out: list[dict[str, Any]] = []
    for rows, k in zip(sources, counts):
        order: list[dict[str, Any]] = []
        while len(order) < k:
            batch = list(rows)
            rng.shuffle(batch)
            order.extend(batch)
        out.extend(order[:k])
    rng.shuffle(out)
    return out, w, counts


def dedup(
    in_path: str | Path,
    out_path: str | Path,
    *,
    key: str = "prompt",
    store: Any = None,
) -> DataResult:
    """Drop rows whose key (`prompt` or `prompt+completion`, whitespace-normalised) was
    already seen; the first occurrence wins so the result is deterministic."""
    if key not in ("prompt", "prompt+completion"):
        raise InvalidParameterError(f"dedup key must be 'prompt' or 'prompt+completion', got {key!r}")
    rows = read_jsonl(in_path)
    seen: set[str] = set()
    kept = []
    for row in rows:
        text = row["prompt"] if key == "prompt" else row["prompt"] + "\x00" + row["completion"]
        norm = " ".join(text.split())
        if norm in seen:
            continue
        seen.add(norm)
        kept.append(row)
    path = Path(out_path)
    n = write_jsonl(path, kept)
    return _finish("dedup", path, n, {"input_sha256": sha256_file(in_path), "key": key, "n_in": len(rows)}, store)
