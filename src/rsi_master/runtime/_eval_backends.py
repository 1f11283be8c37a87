"""Generation backends and adapter loading of the sealed evaluator.

Copied into the seal as `eval_backends.py` beside `evaluator.py` and imported from there
(the script's directory is first on `sys.path`), so it is part of the evaluator digest.
Like the evaluator, it imports nothing from `rsi_master`. The backend a seal runs and its
settings are in the seal's `backend.json`, written when the seal is made: the digest
covers them too, so a run's contract pins how its scores were generated.

`transformers` (the default) is the evaluator's own batched `generate` (left padding, KV
cache). `vllm` generates with vLLM on a GPU; a LoRA adapter checkpoint is served as a
LoRA request on its base model there, and merged into the base for `transformers`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BACKEND_FILE = "backend.json"
DEFAULT_BACKEND: dict[str, Any] = {"name": "transformers"}
GPU_EXTRA = "the [gpu] extra (pip install 'rsi-master[gpu]')"


class BackendUnavailable(Exception):
    """The seal names a backend this machine cannot run."""


def read_backend(seal_dir: Path) -> dict[str, Any]:
    """The seal's backend settings; a seal made before backends existed is `transformers`."""
    path = seal_dir / BACKEND_FILE
    if not path.is_file():
        return dict(DEFAULT_BACKEND)
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or data.get("name") not in ("transformers", "vllm"):
        raise BackendUnavailable(f"the seal's {BACKEND_FILE} names no known backend: {data!r}")
    return data


def apply_adapter(model: Any, adapter_dir: str) -> Any:
    """The base model with a LoRA adapter merged in: one plain model to generate with."""
    from peft import PeftModel

    return PeftModel.from_pretrained(model, adapter_dir, is_trainable=False).merge_and_unload()


def vllm_generate(
    checkpoint: str,
    adapter: str | None,
    prompts: list[list[int]],
    decoding: Any,
    stop: tuple[str, ...],
    settings: dict[str, Any],
) -> list[str]:
    """Greedy (or the task's sampling) generation with vLLM from token ids (tokenized by the
    evaluator as for `transformers`); outputs cut at the first stop string."""
    try:
        import vllm
    except ImportError as exc:
        raise BackendUnavailable(f"evaluation backend vllm is not installed: install {GPU_EXTRA}") from exc
    import torch

    if not torch.cuda.is_available():
        raise BackendUnavailable("evaluation backend vllm needs a CUDA GPU, and none is visible here")
    kwargs: dict[str, Any] = {
        "model": checkpoint,
        "tokenizer": checkpoint,
        "dtype": settings.get("dtype", "auto"),
        "gpu_memory_utilization": float(settings.get("gpu_memory_utilization", 0.85)),
        "seed": 0,
        "enforce_eager": bool(settings.get("enforce_eager", False)),
    }
    if settings.get("max_model_len"):
        kwargs["max_model_len"] = int(settings["max_model_len"])
    lora = None
    if adapter is not None:
        rank = int(json.loads((Path(adapter) / "adapter_config.json").read_text()).get("r", 16))
        # vLLM takes only some ranks as the cap: the smallest one that holds this adapter.
        cap = next((r for r in (8, 16, 32, 64, 128, 256, 320, 512) if r >= rank), rank)
        kwargs.update(enable_lora=True, max_lora_rank=cap)
        from vllm.lora.request import LoRARequest

        lora = LoRARequest("adapter", 1, adapter)
    llm = vllm.LLM(**kwargs)
    params = vllm.SamplingParams(
        max_tokens=int(decoding.max_new_tokens),
        temperature=float(decoding.temperature) if decoding.do_sample else 0.0,
        top_p=float(decoding.top_p) if decoding.do_sample else 1.0,
        seed=0,
        stop=list(stop) or None,
        skip_special_tokens=True,
    )
    inputs: Any = [{"prompt_token_ids": ids} for ids in prompts]
    results = llm.generate(inputs, params, lora_request=lora, use_tqdm=False)
    outputs = []
    for r in results:
        text = r.outputs[0].text
        cut = min([text.find(s) for s in stop if s in text] or [len(text)])
        outputs.append(text[:cut])
    return outputs
