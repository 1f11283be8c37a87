"""The evaluation backend a seal runs, as the harness chooses it (`rsi-master run --eval-backend`).

The settings are written into the seal (`backend.json`, read by the sealed
`eval_backends.py`), so the evaluator digest the contract pins covers them: a score made
by vLLM cannot pass for one made by `transformers`, nor one at another dtype.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rsi_master.runtime._errors import InvalidParameterError

__all__ = ["BACKENDS", "EvalBackend", "check_backend", "make_backend"]

BACKENDS = ("transformers", "vllm")
GPU_EXTRA = "the [gpu] extra (pip install 'rsi-master[gpu]')"


class EvalBackend(BaseModel):
    """How the sealed evaluator generates. Defaults are the settings a seal without them had."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: Literal["transformers", "vllm"] = Field(default="transformers", description="Generation backend.")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        default="auto", description="vllm: weight dtype (`auto`: the checkpoint's)."
    )
    gpu_memory_utilization: float = Field(default=0.85, gt=0.05, le=0.99, description="vllm: share of GPU memory.")
    max_model_len: int | None = Field(default=None, ge=16, le=1_048_576, description="vllm: context length cap.")
    enforce_eager: bool = Field(default=False, description="vllm: no CUDA graphs (slower, starts faster).")

    def seal_bytes(self) -> bytes:
        """`backend.json` in the seal: canonical, so equal settings give equal digests."""
        data: dict[str, Any] = {"name": self.name}
        if self.name == "vllm":
            data.update(self.model_dump(exclude={"name"}))
        return (json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")

    def record(self) -> dict[str, Any]:
        """What the contract shows of it (the seal holds the same)."""
        return json.loads(self.seal_bytes())


def make_backend(name: str | EvalBackend | None = None, **settings: Any) -> EvalBackend:
    """An EvalBackend from a name and settings; one readable error for bad ones."""
    if isinstance(name, EvalBackend):
        return name
    name = name or "transformers"
    if name not in BACKENDS:
        raise InvalidParameterError(f"unknown evaluation backend {name!r}; known: {', '.join(BACKENDS)}")
    try:
        return EvalBackend(name=name, **settings)  # type: ignore[arg-type]  # checked above
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise InvalidParameterError(f"evaluation backend setting {loc}: {err['msg']}") from None


def _gpu_visible() -> bool:
    exe = shutil.which("nvidia-smi")
    if exe is not None:
        try:
            out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return False
        return out.returncode == 0 and any(line.startswith("GPU ") for line in out.stdout.splitlines())
    return False


def check_backend(backend: EvalBackend) -> None:
    """Refuse, before anything is written, a backend this machine cannot run."""
    if backend.name != "vllm":
        return
    if importlib.util.find_spec("vllm") is None:
        raise InvalidParameterError(f"evaluation backend vllm is not installed: install {GPU_EXTRA}")
    if not _gpu_visible():
        raise InvalidParameterError("evaluation backend vllm needs a CUDA GPU, and nvidia-smi shows none")
