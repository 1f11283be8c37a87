"""Where training runs and in which precision, chosen from the machine: CUDA when torch sees
a GPU, else the CPU; bf16 mixed precision where the GPU supports it, fp32 otherwise.

`RSI_MASTER_DEVICE=cpu` (`--device cpu`) forces the CPU (a GPU machine reproducing a CPU
result); `cuda` insists on a GPU, checked up front (`check_device`). On the CPU
nothing changes from the shipped model's settings: fp32, `use_cpu=True`."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rsi_master.runtime._errors import InvalidParameterError

__all__ = ["DeviceSettings", "check_device", "device_settings"]


class DeviceSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    device: Literal["cuda", "cpu"]
    bf16: bool
    n_gpus: int = 0
    name: str = "cpu"


def _forced() -> str:
    forced = os.environ.get("RSI_MASTER_DEVICE", "").strip().lower()
    if forced not in ("", "auto", "cpu", "cuda"):
        raise InvalidParameterError(f"RSI_MASTER_DEVICE (--device) must be auto, cpu or cuda, got {forced!r}")
    return forced


def check_device() -> None:
    """The device setting, checked before a run is created or served: a value that is none of
    auto/cpu/cuda, or cuda on a machine where torch sees no CUDA device, is one line here
    rather than every Worker's training failing later (torch is imported only for cuda)."""
    if _forced() == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise InvalidParameterError(
                "RSI_MASTER_DEVICE=cuda (--device cuda) but torch sees no CUDA device on this machine "
                f"(torch {torch.__version__}); use --device auto or cpu, or install a CUDA build (./setup.sh --gpu)"
            )


def device_settings() -> DeviceSettings:
    forced = _forced()
    import torch

    has_cuda = torch.cuda.is_available()
    if forced == "cuda" and not has_cuda:
        raise InvalidParameterError("RSI_MASTER_DEVICE=cuda but torch sees no CUDA device")
    if forced == "cpu" or not has_cuda:
        return DeviceSettings(device="cpu", bf16=False)
    return DeviceSettings(
        device="cuda",
        bf16=bool(torch.cuda.is_bf16_supported()),
        n_gpus=torch.cuda.device_count(),
        name=torch.cuda.get_device_name(0),
    )
