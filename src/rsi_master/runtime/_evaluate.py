"""Client side of the sealed evaluator: copy the seal privately, check it, launch, record."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rsi_master.artifacts import copy_measured
from rsi_master.errors import ArtifactError
from rsi_master.runtime._adapter import adapter_base_digest, check_adapter_base, is_adapter
from rsi_master.runtime._backend import EvalBackend
from rsi_master.runtime._digest import dir_digest, sha256_file
from rsi_master.runtime._errors import (
    CheckpointLoadError,
    EvaluationError,
    EvaluatorDigestError,
    InputChangedError,
    InvalidParameterError,
)
from rsi_master.runtime._records import EvalResult, SampleRecord
from rsi_master.runtime._seal import private_seal
from rsi_master.runtime._warm import run_sealed
from rsi_master.tasks import SealKey

if TYPE_CHECKING:
    from rsi_master.tasks import Task

SPLITS = ("dev", "review", "final")
# Exit codes of the sealed process (see _evaluator.py).
_EXIT_LOAD, _EXIT_DIGEST, _EXIT_REQUEST = 2, 3, 4


def _task_spec(task: Task | str) -> str:
    if isinstance(task, str):
        return task
    name = getattr(task, "name", None)
    if not isinstance(name, str):
        raise InvalidParameterError("task must be a task name")
    return name


def evaluate(
    checkpoint: str | Path,
    task: Task | str,
    split: str,
    *,
    seal_key: SealKey,
    evaluator: str | Path | None = None,
    expected_evaluator_digest: str | None = None,
    store: Any = None,
    batch_size: int = 256,
    timeout_s: float = 600.0,
    sample_timeout_s: float = 5.0,
    max_samples: int | None = None,
    extra_sources: Sequence[str | Path] = (),
    base: str | Path | None = None,
    backend: EvalBackend | None = None,
) -> EvalResult:
    """Score a checkpoint on a split of a task with the sealed evaluator, in its own process.

    `seal_key` draws the split's items: a run's key (`ExpOS.seal_key`), the operator's
    (`operator_seal_key`) or `PUBLIC_SEAL_KEY`; it reaches the evaluator on a pipe.
    `evaluator` is the sealed copy to run (a run's stored seal); without one, a seal is
    made from the installed code. Either way it is first copied into a private directory
    and hashed there, and `expected_evaluator_digest` (from the task contract) pins that
    hash: on a mismatch nothing runs. `max_samples` scores only the first items (for
    tests); the record says how many the split has, so a partial evaluation is visible
    as such. `extra_sources` adds modules to the seal, so that `task="module:Class"` can
    name a task outside the suite (tests only).

    A LoRA adapter checkpoint (`adapter_base.json`) is scored on `base`, the checkpoint it is
    bound to: both are copied privately and measured, and a base that does not measure the
    digest the adapter names is refused. `backend` is the generation backend of a seal made
    here (no `evaluator`); a stored seal carries its own.
    """
    if split not in SPLITS:
        raise InvalidParameterError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    if not isinstance(seal_key, SealKey):
        raise InvalidParameterError("seal_key must be a SealKey: a run's, the operator's, or PUBLIC_SEAL_KEY")
    if evaluator is not None and expected_evaluator_digest is None:
        # A stored copy is only as good as the digest it is checked against.
        raise InvalidParameterError(
            "an evaluator copy runs only with the digest it must have (expected_evaluator_digest)"
        )
    for name, value in (("batch_size", batch_size), ("max_samples", max_samples)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise InvalidParameterError(f"{name} must be a positive integer, got {value!r}")
    if timeout_s <= 0 or sample_timeout_s <= 0:
        raise InvalidParameterError("timeouts must be positive")
    ckpt = Path(checkpoint).resolve()
    if not ckpt.is_dir():
        raise CheckpointLoadError(f"checkpoint {ckpt} is not a directory")
    adapter = is_adapter(ckpt)
    if adapter and base is None:
        raise CheckpointLoadError(
            f"checkpoint {ckpt} is a LoRA adapter: its base checkpoint {adapter_base_digest(ckpt)} is needed (base=)"
        )
    if not adapter and not (ckpt / "config.json").is_file():
        raise CheckpointLoadError(f"checkpoint {ckpt} has no config.json: not a Hugging Face model directory")

    # A task directory's task outside a run (no stored seal) rides in the fresh seal as the bytes
    # it was read from; a run's stored seal already holds them.
    task_files = getattr(task, "files", None) if evaluator is None and not isinstance(task, str) else None
    with private_seal(evaluator, extra_sources, task_files, backend) as private:
        digest = private.digest
        if expected_evaluator_digest is not None and digest != expected_evaluator_digest:
            raise EvaluatorDigestError(
                f"evaluator digest {digest} differs from the pinned {expected_evaluator_digest}; refusing to evaluate"
            )
        if store is not None and evaluator is None:
            store.put_dir(private.seal)  # the record names an evaluator its store can show
        # The evaluator loads a private copy of the checkpoint hashed as it was written, beside
        # the seal's: the digests in the record are of the bytes scored, not of whatever
        # `checkpoint` holds later.
        held = private.root / "checkpoint"
        try:
            checkpoint_digest = copy_measured(ckpt, held)
        except ArtifactError as exc:
            raise CheckpointLoadError(f"checkpoint {ckpt} cannot be read: {exc}") from None
        tokenizer_digest = _file_digest(held / "tokenizer.json")
        generation_config_digest = _file_digest(held / "generation_config.json")
        request = _request(held, task, split, batch_size, sample_timeout_s, max_samples)
        base_digest = None
        if adapter:
            held_base = private.root / "base"
            try:
                base_digest = copy_measured(Path(str(base)).resolve(), held_base)
            except ArtifactError as exc:
                raise CheckpointLoadError(f"base checkpoint {base} cannot be read: {exc}") from None
            # Checked on the bytes the evaluator will load, not on the path given.
            check_adapter_base(held, held_base, base_digest)
            request.update(checkpoint=str(held_base), adapter=str(held))
        reply, proc = _launch(private.root, private.seal, digest, request, seal_key, timeout_s)
        if dir_digest(held) != checkpoint_digest:
            raise InputChangedError(f"the private copy of checkpoint {ckpt} changed during evaluation")
        if adapter and dir_digest(private.root / "base") != base_digest:
            raise InputChangedError(f"the private copy of the base of adapter {ckpt} changed during evaluation")
    if reply is None:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise EvaluationError(f"evaluator process failed (exit {proc.returncode}): {tail}")
    if "error" in reply:
        if reply.get("code") == _EXIT_LOAD:
            raise CheckpointLoadError(reply["error"])
        if reply.get("code") == _EXIT_REQUEST:
            raise InvalidParameterError(reply["error"])
        if reply.get("code") == _EXIT_DIGEST:
            raise EvaluatorDigestError(reply["error"])
        raise EvaluationError(reply["error"])
    if reply["evaluator_digest"] != digest:
        raise EvaluatorDigestError("evaluator reported a digest other than the one it was launched with")
    result = EvalResult(
        checkpoint_dir=str(ckpt),
        checkpoint_digest=checkpoint_digest,
        tokenizer_digest=tokenizer_digest,
        generation_config_digest=generation_config_digest,
        base_digest=base_digest,
        samples=[SampleRecord(**s) for s in reply.pop("samples")],
        **reply,
    )
    if store is not None:
        record_digest = store.put_bytes(result.model_dump_json().encode("utf-8"))
        result = result.model_copy(update={"record_digest": record_digest})
    return result


def _request(
    ckpt: Path, task: Task | str, split: str, batch_size: int, sample_timeout_s: float, max_samples: int | None
) -> dict[str, Any]:
    return {
        "checkpoint": str(ckpt),
        "task": _task_spec(task),
        "split": split,
        "batch_size": batch_size,
        "sample_timeout_s": sample_timeout_s,
        "max_samples": max_samples,
    }


def _launch(
    root: Path, seal: Path, digest: str, request: dict[str, Any], seal_key: SealKey, timeout_s: float
) -> tuple[dict[str, Any] | None, subprocess.CompletedProcess]:
    """Run the evaluator from the private copy; (its result or None, the process)."""
    req_path, res_path = root / "request.json", root / "result.json"
    req_path.write_text(json.dumps(request))
    # -E -s: no PYTHON* variables and no user site-packages, both of which an agent can
    # point at code of its own; the child imports the tasks only from the seal.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    args = ["--request", str(req_path), "--result", str(res_path), "--expected-digest", digest]
    try:
        # Forked from this process's pre-imported Python where it has one (`_warm.py`).
        proc = run_sealed(
            seal / "evaluator.py",
            args,
            cwd=root,
            env=env,
            input=json.dumps({"seal_key": seal_key.to_wire()}),
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as exc:
        raise EvaluationError(f"evaluator timed out after {timeout_s:.0f}s on {request['checkpoint']}") from exc
    if not res_path.is_file():
        return None, proc
    return json.loads(res_path.read_text()), proc


def _file_digest(path: Path) -> str | None:
    return sha256_file(path) if path.is_file() else None
