"""Sampling completions from a checkpoint on training prompts, in a child process.

Rejection sampling and self-distillation (`data.sample`) draw several completions per prompt
of the task's `train` pool from a checkpoint of the run. The checkpoint is copied privately and
hashed as it is written; the child loads the copy, and the copy must still measure the same when
the child is done, so the digest reported is of the weights that sampled. Generation runs in its
own process for the same reason as the evaluator's: the model's memory goes when it exits.
Never an evaluation: no split's items reach this module, only the prompts the caller passes.

Run as `python -m rsi_master.runtime._sample REQUEST RESULT` (the child side).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from rsi_master.artifacts import copy_measured
from rsi_master.errors import ArtifactError
from rsi_master.runtime._chat import chat_format
from rsi_master.runtime._device import device_settings
from rsi_master.runtime._digest import dir_digest
from rsi_master.runtime._errors import CheckpointLoadError, InputChangedError, InvalidParameterError, TrainingError
from rsi_master.runtime._warm import run_module

__all__ = ["SampleResult", "sample"]

MAX_SAMPLES = 200_000  # prompts x samples per call: one larger request is a mistake
# Past its time limit the child is stopped after this much more (it stops itself before a batch
# that would not end in time; this covers a batch that took far longer than the one before).
STOP_GRACE_S = 15.0


class SampleResult(BaseModel):
    outputs: list[list[str]] = Field(description="Per prompt, its sampled completions cut at the first stop string.")
    checkpoint_digest: str = Field(description="Digest of the checkpoint bytes that sampled.")
    seconds: float
    complete: bool = Field(
        default=True,
        description="False when the time limit stopped sampling early: `outputs` covers the first prompts only.",
    )


def sample(
    checkpoint: str | Path,
    prompts: Sequence[str],
    *,
    samples: int,
    max_new_tokens: int,
    temperature: float,
    top_p: float = 1.0,
    stop: Sequence[str] = (),
    seed: int = 0,
    chat: bool = False,
    batch_size: int = 64,
    timeout_s: float = 3600.0,
    time_limit_s: float | None = None,
) -> SampleResult:
    """`samples` completions per prompt from `checkpoint` (a model directory), in a child process.
    `chat`: each prompt is shown as the user turn of the model's chat template, as the sealed
    evaluator shows a chat task's prompts (and training its rows). `time_limit_s`: the caller's
    time left; the child starts no batch it would not finish by then and the result holds the
    prompts sampled so far (`complete` False), rather than running past the caller's deadline."""
    if not prompts or not all(isinstance(p, str) for p in prompts):
        raise InvalidParameterError("sample needs a non-empty list of prompt strings")
    for name, value, low in (
        ("samples", samples, 1),
        ("max_new_tokens", max_new_tokens, 1),
        ("batch_size", batch_size, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InvalidParameterError(f"{name} must be an integer >= {low}, got {value!r}")
    if len(prompts) * samples > MAX_SAMPLES:
        raise InvalidParameterError(f"{len(prompts)} prompts x {samples} samples exceed {MAX_SAMPLES}")
    if not (0 < temperature <= 10) or not (0 < top_p <= 1):
        raise InvalidParameterError(f"temperature must be in (0, 10] and top_p in (0, 1], got {temperature}, {top_p}")
    source = Path(checkpoint)
    if not (source / "config.json").is_file():
        raise CheckpointLoadError(f"checkpoint {source} has no config.json")
    t0 = time.time()
    by_deadline = time_limit_s is not None and max(1.0, time_limit_s) + STOP_GRACE_S < timeout_s
    if time_limit_s is not None and by_deadline:
        timeout_s = max(1.0, time_limit_s) + STOP_GRACE_S
    with tempfile.TemporaryDirectory(prefix="rsi-sample-") as tmp:
        held = Path(tmp) / "checkpoint"
        try:
            digest = copy_measured(source, held)
        except ArtifactError as exc:
            raise CheckpointLoadError(f"checkpoint {source} cannot be read: {exc}") from None
        request = {
            "checkpoint": str(held),
            "prompts": list(prompts),
            "samples": samples,
            "max_new_tokens": max_new_tokens,
            "temperature": float(temperature),
            "top_p": float(top_p),
            "stop": list(stop),
            "seed": int(seed),
            "chat": bool(chat),
            "batch_size": batch_size,
            "stop_at": None if time_limit_s is None else t0 + time_limit_s,
        }
        req, res = Path(tmp) / "request.json", Path(tmp) / "result.json"
        req.write_text(json.dumps(request))
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        try:
            # Forked from this process's pre-imported Python where it has one (`_warm.py`).
            proc = run_module("rsi_master.runtime._sample", [str(req), str(res)], env=env, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            if by_deadline:
                raise TrainingError(
                    f"sampling stopped at the caller's deadline ({timeout_s:.0f}s with grace)"
                ) from None
            raise TrainingError(f"sampling timed out after {timeout_s:.0f}s") from None
        if proc.returncode != 0 or not res.is_file():
            tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
            raise TrainingError(f"sampling process failed (exit {proc.returncode}): {tail}"[:500])
        outputs = json.loads(res.read_text())["outputs"]
        if dir_digest(held) != digest:
            raise InputChangedError(f"the private copy of checkpoint {source} changed while sampling")
    short = time_limit_s is not None and len(outputs) < len(prompts)
    if (len(outputs) != len(prompts) and not short) or any(len(o) != samples for o in outputs):
        raise TrainingError("sampling process returned the wrong number of outputs")
    return SampleResult(
        outputs=outputs, checkpoint_digest=digest, seconds=round(time.time() - t0, 3), complete=not short
    )


def _generate(request: dict[str, Any]) -> list[list[str]]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, StoppingCriteria, StoppingCriteriaList
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    path = request["checkpoint"]
    device = device_settings().device
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model: Any = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float32)
    model = model.to(device)
    model.eval()
    tokenizer.padding_side = "left"  # batched generation continues from the right edge
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    stop = tuple(request["stop"])

    class StopOnStrings(StoppingCriteria):
        def __init__(self, width: int) -> None:
            self.width = width

        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            texts = tokenizer.batch_decode(input_ids[:, self.width :], skip_special_tokens=True)
            return torch.tensor([any(s in t for s in stop) for t in texts], dtype=torch.bool, device=input_ids.device)

    chat = bool(request.get("chat"))
    shown = [chat_format(tokenizer).prompt(p) for p in request["prompts"]] if chat else request["prompts"]
    k = int(request["samples"])
    flat = [p for p in shown for _ in range(k)]
    out: list[str] = []
    torch.manual_seed(int(request["seed"]))  # the same request samples the same completions on one machine
    stop_at, last = request.get("stop_at"), 0.0
    with torch.inference_mode():
        for start in range(0, len(flat), int(request["batch_size"])):
            if stop_at is not None and time.time() + last > stop_at:
                break  # this batch would end past the caller's deadline (priced at the last one)
            began = time.time()
            batch = flat[start : start + int(request["batch_size"])]
            # A chat template writes its own special tokens: adding them again would double the BOS.
            enc = tokenizer(batch, return_tensors="pt", padding=True, add_special_tokens=not chat).to(device)
            width = enc["input_ids"].shape[1]
            gen = model.generate(
                **enc,
                do_sample=True,
                temperature=request["temperature"],
                top_p=request["top_p"],
                max_new_tokens=request["max_new_tokens"],
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
                stopping_criteria=StoppingCriteriaList([StopOnStrings(width)]) if stop else None,
            )
            for text in tokenizer.batch_decode(gen[:, width:], skip_special_tokens=True):
                cut = min([text.find(s) for s in stop if s in text] or [len(text)])
                out.append(text[:cut])
            last = time.time() - began
    return [out[i * k : (i + 1) * k] for i in range(len(out) // k)]  # whole prompts only


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m rsi_master.runtime._sample REQUEST RESULT", file=sys.stderr)
        return 2
    request = json.loads(Path(args[0]).read_text())
    Path(args[1]).write_text(json.dumps({"outputs": _generate(request)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
