"""Client side of the sealed evaluator: seal, launch the process, check, record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

from rsi_master._proc import run_tied
from rsi_master.artifacts import copy_measured
from rsi_master.errors import ArtifactError
from rsi_master.runtime._digest import dir_digest, sha256_file
from rsi_master.runtime._errors import CheckpointLoadError, EvaluationError, InputChangedError, InvalidParameterError
from rsi_master.runtime._records import EvalResult, SampleRecord
from rsi_master.runtime._seal import seal_evaluator

SPLITS = ("dev", "review", "final")
# Exit codes of the sealed process (see _evaluator.py).
_EXIT_LOAD, _EXIT_DIGEST, _EXIT_REQUEST = 2, 3, 4


def _task_spec(task: Any) -> str:
    if isinstance(task, str):
        return task
    name = getattr(task, "name", None)
    if not isinstance(name, str):
        raise InvalidParameterError("task must be a task name")
    return name


def evaluate(
    checkpoint: str | Path,
    task: Any,
    split: str,
    *,
    expected_evaluator_digest: str | None = None,
    store: Any = None,
    batch_size: int = 256,
    timeout_s: float = 600.0,
    sample_timeout_s: float = 5.0,
    max_samples: int | None = None,
    extra_sources: Sequence[str | Path] = (),
) -> EvalResult:
    """Score a checkpoint on a split of a task with the sealed evaluator, in its own process.

    `expected_evaluator_digest` (from the task contract) pins the evaluator: if the
    sealed copy made from the installed code differs, nothing runs. `max_samples` scores
    only the first items (for tests); the record says how many the split has, so a
    partial evaluation is visible as such. `extra_sources` adds modules to the seal, so
    that `task="module:Class"` can name a task outside the suite (tests only).
    """
    if split not in SPLITS:
        raise InvalidParameterError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    for name, value in (("batch_size", batch_size), ("max_samples", max_samples)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise InvalidParameterError(f"{name} must be a positive integer, got {value!r}")
    if timeout_s <= 0 or sample_timeout_s <= 0:
        raise InvalidParameterError("timeouts must be positive")
    ckpt = Path(checkpoint).resolve()
    if not ckpt.is_dir():
        raise CheckpointLoadError(f"checkpoint {ckpt} is not a directory")
    if not (ckpt / "config.json").is_file():
        raise CheckpointLoadError(f"checkpoint {ckpt} has no config.json: not a Hugging Face model directory")

    seal_dir, digest = seal_evaluator(store=store, extra_sources=extra_sources)
    seal_dir = Path(seal_dir).resolve()  # the evaluator runs with its own cwd
    if expected_evaluator_digest is not None and digest != expected_evaluator_digest:
        raise EvaluationError(
            f"evaluator digest {digest} differs from the pinned {expected_evaluator_digest}; refusing to evaluate"
        )
    request = {
        "checkpoint": str(ckpt),
        "task": _task_spec(task),
        "split": split,
        "batch_size": batch_size,
        "sample_timeout_s": sample_timeout_s,
        "max_samples": max_samples,
    }
    with tempfile.TemporaryDirectory(prefix="rsi-eval-") as tmp:
        # The evaluator loads a private copy hashed as it was written, so the digests in
        # the record are of the bytes scored, not of whatever `checkpoint` holds later.
        held = Path(tmp) / "checkpoint"
        try:
            checkpoint_digest = copy_measured(ckpt, held)
        except ArtifactError as exc:
            raise CheckpointLoadError(f"checkpoint {ckpt} cannot be read: {exc}") from None
        tokenizer_digest = _file_digest(held / "tokenizer.json")
        generation_config_digest = _file_digest(held / "generation_config.json")
        request["checkpoint"] = str(held)
        req_path, res_path = Path(tmp) / "request.json", Path(tmp) / "result.json"
        req_path.write_text(json.dumps(request))
        # The child sees no PYTHONPATH: it imports the tasks only from the seal.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(PYTHONDONTWRITEBYTECODE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        cmd = [sys.executable, "-B", str(seal_dir / "evaluator.py"), "--request", str(req_path),
               "--result", str(res_path), "--expected-digest", digest]
        try:
            proc = run_tied(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise EvaluationError(f"evaluator timed out after {timeout_s:.0f}s on {ckpt}") from exc
        if not res_path.is_file():
            tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
            raise EvaluationError(f"evaluator process failed (exit {proc.returncode}): {tail}")
        payload = json.loads(res_path.read_text())
        if dir_digest(held) != checkpoint_digest:
            raise InputChangedError(f"the private copy of checkpoint {ckpt} changed during evaluation")
    if "error" in payload:
        if payload.get("code") == _EXIT_LOAD:
            raise CheckpointLoadError(payload["error"])
        if payload.get("code") == _EXIT_REQUEST:
            raise InvalidParameterError(payload["error"])
        raise EvaluationError(payload["error"])
    if payload["evaluator_digest"] != digest:
        raise EvaluationError("evaluator reported a digest other than the one it was launched with")
    result = EvalResult(
        checkpoint_dir=str(ckpt),
        checkpoint_digest=checkpoint_digest,
        tokenizer_digest=tokenizer_digest,
        generation_config_digest=generation_config_digest,
        samples=[SampleRecord(**s) for s in payload.pop("samples")],
        **payload,
    )
    if store is not None:
        record_digest = store.put_bytes(result.model_dump_json().encode("utf-8"))
        result = result.model_copy(update={"record_digest": record_digest})
    return result


def _file_digest(path: Path) -> str | None:
    return sha256_file(path) if path.is_file() else None
