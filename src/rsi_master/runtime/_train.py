"""Training entry point: validate, load the parent, run a TRL trainer, write a checkpoint.

Every method writes the same layout under `out_dir`:

    checkpoint/          full HF model (LoRA merged), tokenizer and generation config
                         copied byte-for-byte from the parent so evaluation is unchanged
    train_config.json    the TrainSpec plus the digests of the data and parent bytes used
    train_log.jsonl      one JSON object per trainer log event
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rsi_master.artifacts import copy_measured, read_measured
from rsi_master.errors import ArtifactError
from rsi_master.runtime._adapter import (
    adapter_base_digest,
    check_adapter_base,
    is_adapter,
    load_adapter_model,
    write_binding,
)
from rsi_master.runtime._chat import chat_format, is_chat
from rsi_master.runtime._digest import dir_digest
from rsi_master.runtime._dpo import run_dpo
from rsi_master.runtime._errors import CheckpointLoadError, InputChangedError, InvalidParameterError, TrainingError
from rsi_master.runtime._grpo import run_grpo
from rsi_master.runtime._hf_model import defining_files
from rsi_master.runtime._jsonl import parse_jsonl
from rsi_master.runtime._model import base_model_dir
from rsi_master.runtime._records import TrainConfig, TrainResult
from rsi_master.runtime._sft import run_sft
from rsi_master.runtime._spec import TrainSpec, make_spec
from rsi_master.runtime._tasks import get_task

if TYPE_CHECKING:
    from rsi_master.tasks import Task

Progress = Callable[[dict[str, Any]], None]
# Files a child checkpoint writes itself; every other defining file of the parent (tokenizer
# files, chat template, generation config) it inherits unchanged: they define tokenization,
# stopping and decoding defaults, which training must not move.
_OWN = re.compile(r"^(config\.json|.+\.safetensors|pytorch_model.*\.bin|.+\.index\.json)$")


def _load_parent(parent: Path) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (parent / "config.json").is_file():
        raise CheckpointLoadError(f"parent checkpoint {parent} has no config.json")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(parent), local_files_only=True)
        # fp32 master weights on every device; on CUDA the trainer adds bf16 autocast.
        model = AutoModelForCausalLM.from_pretrained(str(parent), local_files_only=True, dtype=torch.float32)
    except Exception as exc:
        raise CheckpointLoadError(f"parent checkpoint {parent} does not load: {type(exc).__name__}: {exc}") from exc
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        # Many base models ship without a pad token; batches need one, and padding is masked.
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def save_checkpoint(model: Any, ckpt: Path, parent_dir: Path, bound_to: str | None = None) -> None:
    """Full weights from training (or, `bound_to` a base digest, the LoRA adapter alone);
    tokenizer and generation config from the parent."""
    model.save_pretrained(str(ckpt), safe_serialization=True)
    if bound_to is not None:
        write_binding(ckpt, bound_to)
    for name in defining_files(parent_dir):
        if not _OWN.match(name):
            (ckpt / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(parent_dir / name, ckpt / name)


class _SnapshotCallback:
    """Saves a full checkpoint at given optimizer steps (LoRA merged into a copy)."""

    def __new__(cls, root: Path, steps: list[int], parent_dir: Path, merge: bool) -> Any:
        import copy

        from transformers import TrainerCallback

        class SnapshotCallback(TrainerCallback):
            def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
                if state.global_step in steps and model is not None:
                    snap = copy.deepcopy(model).merge_and_unload() if merge else model
                    save_checkpoint(snap, root / f"step-{state.global_step:06d}", parent_dir)

        return SnapshotCallback()


class _LogCallback:
    """Appends trainer logs to the run's log file and forwards them to `progress`."""

    def __new__(cls, log_path: Path, progress: Progress | None, t0: float) -> Any:
        from transformers import TrainerCallback

        class LogCallback(TrainerCallback):
            def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
                entry = {
                    "step": state.global_step,
                    "max_steps": state.max_steps,
                    "elapsed_s": round(time.time() - t0, 2),
                }
                entry.update({k: v for k, v in (logs or {}).items() if isinstance(v, (int, float, str))})
                with open(log_path, "a") as f:
                    f.write(json.dumps(entry) + "\n")
                if progress is not None:
                    progress(entry)

        return LogCallback()


def train(
    data: str | Path,
    out_dir: str | Path,
    spec: TrainSpec | dict[str, Any],
    *,
    parent: str | Path | None = None,
    parent_base: str | Path | None = None,
    store: Any = None,
    progress: Progress | None = None,
    snapshot_steps: Sequence[int] = (),
    task: Task | None = None,
) -> TrainResult:
    """Train `parent` (default: the shipped base model) on a JSONL dataset.

    SFT and LoRA train on `prompt`/`completion` rows (loss on the completion only); DPO
    builds (chosen, rejected) pairs from them; GRPO uses the prompts and the task's
    reward on sampled completions. `snapshot_steps` also saves full checkpoints at those
    optimizer steps under `out_dir/snapshots/step-NNNNNN` (learning curves from one run).
    A parent that is a LoRA adapter checkpoint needs `parent_base`, the base it is bound to
    (measured and checked like the parent); `lora_save="adapter"` writes an adapter bound to
    the parent's digest instead of a merged model.
    """
    if isinstance(spec, dict):
        spec = make_spec(**spec)
    data_path = Path(data)
    if not data_path.is_file():
        raise InvalidParameterError(f"training data {data_path} does not exist")
    # Measure, don't trust: the data is read once and parsed from the bytes that were
    # hashed; the parent is copied privately, hashed as it is written, and loaded from the
    # copy. The digests recorded are of what was trained on, whatever happens to the
    # source paths meanwhile.
    try:
        data_bytes, data_digest = read_measured(data_path)
    except ArtifactError as exc:
        raise InvalidParameterError(f"training data {data_path} cannot be read: {exc}") from None
    try:
        rows = parse_jsonl(data_bytes, data_path)
    except ValueError as exc:
        raise InvalidParameterError(str(exc)) from None
    if not rows:
        raise InvalidParameterError(f"training data {data_path} is empty")
    for key in ("prompt", "completion"):
        if key not in rows[0]:
            raise InvalidParameterError(f"training data rows need a {key!r} field")
    source_parent = Path(parent) if parent is not None else base_model_dir()
    if task is not None:
        # A task object outside the suite (tests); it must be the one the spec names.
        if getattr(task, "name", None) != spec.task:
            raise InvalidParameterError(
                f"task object {getattr(task, 'name', None)!r} is not the spec's task {spec.task!r}"
            )
    elif spec.task is not None:
        task = get_task(spec.task)

    out = Path(out_dir)
    ckpt = out / "checkpoint"
    if ckpt.exists():
        raise InvalidParameterError(f"{ckpt} already exists; training never overwrites a checkpoint")
    parent_is_adapter = is_adapter(source_parent)
    if parent_is_adapter:
        if spec.lora_save == "adapter":
            raise InvalidParameterError(
                "lora_save=adapter needs a full parent checkpoint; this parent is itself an adapter (use lora_save=merged)"
            )
        if parent_base is None:
            raise CheckpointLoadError(
                f"parent checkpoint {source_parent} is a LoRA adapter: its base "
                f"{adapter_base_digest(source_parent)} is needed (parent_base=)"
            )
    elif not (source_parent / "config.json").is_file():
        raise CheckpointLoadError(f"parent checkpoint {source_parent} has no config.json")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rsi-train-") as held:
        parent_dir = Path(held) / "parent"
        try:
            parent_digest = copy_measured(source_parent, parent_dir)
        except ArtifactError as exc:
            raise CheckpointLoadError(f"parent checkpoint {source_parent} cannot be read: {exc}") from None
        base_dir, base_digest = None, None
        if parent_is_adapter:
            base_dir = Path(held) / "parent_base"
            try:
                base_digest = copy_measured(Path(str(parent_base)), base_dir)
            except ArtifactError as exc:
                raise CheckpointLoadError(f"base checkpoint {parent_base} cannot be read: {exc}") from None
            check_adapter_base(parent_dir, base_dir, base_digest)
        result = _train_held(
            rows,
            data_path,
            data_digest,
            source_parent,
            parent_dir,
            parent_digest,
            out,
            spec,
            progress,
            snapshot_steps,
            task,
            base_dir,
            base_digest,
        )
        # The copy is private, but the same user could still reach it: if it changed, what
        # was loaded (or inherited into the checkpoint) is not what was measured.
        if dir_digest(parent_dir) != parent_digest:
            raise InputChangedError(f"the private copy of parent checkpoint {source_parent} changed during training")
        if base_dir is not None and dir_digest(base_dir) != base_digest:
            raise InputChangedError(f"the private copy of the base under {source_parent} changed during training")
    if store is not None:
        # Moved, not copied: a big model's checkpoint is written once, then handed to the store.
        digest = store.put_dir(ckpt, move=True)
        result = result.model_copy(
            update={
                "checkpoint_dir": str(store.path(digest)),
                "checkpoint_digest": digest,
                "config_digest": store.put_file(result.config_path),
                "log_digest": store.put_file(result.log_path),
            }
        )
    return result


def _train_held(
    rows: list[dict[str, Any]],
    data_path: Path,
    data_digest: str,
    source_parent: Path,
    parent_dir: Path,
    parent_digest: str,
    out: Path,
    spec: TrainSpec,
    progress: Progress | None,
    snapshot_steps: Sequence[int],
    task: Task | None,
    base_dir: Path | None = None,
    base_digest: str | None = None,
) -> TrainResult:
    ckpt = out / "checkpoint"
    log_path = out / "train_log.jsonl"
    log_path.write_text("")
    config = TrainConfig(
        spec=spec.model_dump(),
        data=str(data_path),
        data_sha256=data_digest,
        n_rows=len(rows),
        parent=str(source_parent),
        parent_digest=parent_digest,
        parent_base_digest=base_digest,
    )
    dumped = config.model_dump()
    if base_digest is None:
        del dumped["parent_base_digest"]  # a full parent's config reads as it always did
    config_path = out / "train_config.json"
    config_path.write_text(json.dumps(dumped, indent=2, sort_keys=True) + "\n")

    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    torch.manual_seed(spec.seed)
    if base_dir is not None:
        model, tokenizer = _load_parent(base_dir)
        model = load_adapter_model(model, parent_dir)
    else:
        model, tokenizer = _load_parent(parent_dir)
    t0 = time.time()
    callback = _LogCallback(log_path, progress, t0)
    callbacks = [callback]
    if snapshot_steps:
        callbacks.append(
            _SnapshotCallback(out / "snapshots", sorted(set(snapshot_steps)), parent_dir, spec.method == "lora")
        )
    work = out / "_work"

    chat = chat_format(tokenizer) if is_chat(task) else None
    try:
        if spec.method in ("sft", "lora"):
            if chat is not None:
                rows = [
                    {**r, "prompt": chat.prompt(r["prompt"]), "completion": chat.completion(r["completion"])}
                    for r in rows
                ]
            model, steps = run_sft(model, tokenizer, rows, spec, work, callbacks)
        elif spec.method == "dpo":
            assert task is not None  # TrainSpec requires a task for dpo and grpo
            model, steps = run_dpo(model, tokenizer, rows, spec, task, work, callbacks, chat=chat)
        else:
            assert task is not None  # TrainSpec requires a task for dpo and grpo
            model, steps = run_grpo(model, tokenizer, rows, spec, task, work, callbacks, chat=chat)
    except (InvalidParameterError, CheckpointLoadError):
        raise
    except Exception as exc:
        raise TrainingError(f"{spec.method} training failed: {type(exc).__name__}: {exc}") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seconds = time.time() - t0

    bound_to = parent_digest if spec.lora_save == "adapter" else None
    save_checkpoint(model, ckpt, parent_dir, bound_to)
    logs = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    losses = [e["loss"] for e in logs if "loss" in e]
    tail = losses[-3:]
    return TrainResult(
        method=spec.method,
        checkpoint_dir=str(ckpt),
        checkpoint_digest=dir_digest(ckpt),
        parent_digest=parent_digest,
        parent_base_digest=base_digest,
        adapter_base_digest=bound_to,
        data_digest=data_digest,
        config_path=str(config_path),
        log_path=str(log_path),
        steps=steps,
        train_seconds=round(seconds, 2),
        final_loss=sum(tail) / len(tail) if tail else None,
    )
