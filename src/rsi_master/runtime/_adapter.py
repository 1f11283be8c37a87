"""LoRA adapter checkpoints, bound to the digest of the base they adapt.

A big model's LoRA run changes a few MB of weights; saving it merged would store the
whole model again (8 GB for a 4B model). An adapter checkpoint holds the adapter
(`adapter_config.json`, `adapter_model.safetensors`), the tokenizer and generation files
inherited from its base, and `adapter_base.json`, which names the base by its directory
digest. That file is inside the adapter's own digest, so the pair is the provenance:
loading measures both directories and refuses a base that is not the one named (a
swapped base), and a changed `adapter_base.json` is a changed adapter digest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rsi_master.runtime._digest import dir_digest
from rsi_master.runtime._errors import CheckpointLoadError, SwappedBaseError

__all__ = ["ADAPTER_BASE_FILE", "adapter_base_digest", "check_adapter_base", "is_adapter", "load_adapter_model"]

ADAPTER_BASE_FILE = "adapter_base.json"


def is_adapter(path: str | Path) -> bool:
    """An adapter checkpoint: adapter weights and the base binding, no full model."""
    p = Path(path)
    return (p / ADAPTER_BASE_FILE).is_file() and (p / "adapter_config.json").is_file()


def adapter_base_digest(path: str | Path) -> str:
    """The base digest an adapter checkpoint is bound to."""
    p = Path(path) / ADAPTER_BASE_FILE
    try:
        digest = json.loads(p.read_text())["base_digest"]
    except (OSError, ValueError, KeyError, TypeError):
        raise CheckpointLoadError(f"{p} does not name the adapter's base (base_digest)") from None
    if not isinstance(digest, str) or len(digest) != 64:
        raise CheckpointLoadError(f"{p} names no base digest")
    return digest


def check_adapter_base(adapter: Path, base: Path | None, measured_base: str | None = None) -> str:
    """The base digest, after checking that `base` measures it; a swapped base is refused."""
    want = adapter_base_digest(adapter)
    if base is None:
        raise CheckpointLoadError(f"checkpoint {adapter} is a LoRA adapter: its base checkpoint {want} is needed")
    got = measured_base if measured_base is not None else dir_digest(base)
    if got != want:
        raise SwappedBaseError(
            f"adapter {adapter} is bound to base {want}, but the base given measures {got}: refusing a swapped base"
        )
    return want


def write_binding(adapter: Path, base_digest: str) -> None:
    (adapter / ADAPTER_BASE_FILE).write_text(json.dumps({"base_digest": base_digest}, sort_keys=True) + "\n")


def load_adapter_model(model: Any, adapter: Path) -> Any:
    """`model` (the loaded base) with the adapter merged in, as one plain model to train further."""
    from peft import PeftModel

    try:
        merged = PeftModel.from_pretrained(model, str(adapter), is_trainable=False).merge_and_unload()
        return merged.requires_grad_(True)  # loading for inference froze every weight
    except Exception as exc:
        raise CheckpointLoadError(f"adapter {adapter} does not load: {type(exc).__name__}: {exc}") from exc
