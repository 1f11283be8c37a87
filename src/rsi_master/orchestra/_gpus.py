"""GPUs per slot: each slot process gets its own `CUDA_VISIBLE_DEVICES`.

The devices handed out are the ones this process may use: the entries of its own
`CUDA_VISIBLE_DEVICES` when that is set, else every GPU `nvidia-smi -L` lists (torch's
count where there is no `nvidia-smi`). Slot `i` gets the `i`-th group of `per_slot` of
them, fixed for the run, so that two slots never share a device. A slot's sealed
evaluator inherits its environment, hence its devices.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import RsiMasterError

__all__ = ["ENV", "assign_devices", "slot_environment", "visible_gpus"]

ENV = "CUDA_VISIBLE_DEVICES"


def _nvidia_smi() -> list[str] | None:
    """GPU indices `nvidia-smi -L` lists; None without a working nvidia-smi."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return [str(i) for i, line in enumerate(ln for ln in out.stdout.splitlines() if ln.startswith("GPU "))]


def _torch_count() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def visible_gpus() -> tuple[list[str], str]:
    """(device ids this process may hand out, where the list came from)."""
    own = os.environ.get(ENV)
    if own is not None and own.strip():
        return [d.strip() for d in own.split(",") if d.strip()], f"{ENV}={own}"
    listed = _nvidia_smi()
    if listed is not None:
        return listed, "nvidia-smi"
    return [str(i) for i in range(_torch_count())], "torch (no nvidia-smi on PATH)"


def assign_devices(slots: int, per_slot: int) -> list[str] | None:
    """`CUDA_VISIBLE_DEVICES` of each slot (None: GPUs not asked for); refused when too few are visible."""
    if isinstance(per_slot, bool) or not isinstance(per_slot, int) or per_slot < 0:
        raise RsiMasterError(f"--gpus-per-slot must be 0 or a positive integer, got {per_slot!r}")
    if per_slot == 0:
        return None
    gpus, source = visible_gpus()
    need = slots * per_slot
    if need > len(gpus):
        raise RsiMasterError(
            f"--gpus-per-slot {per_slot} with --slots {slots} needs {need} GPUs, but {source} shows "
            f"{len(gpus)}; lower --slots or --gpus-per-slot (0 runs without assigning GPUs)"
        )
    return [",".join(gpus[s * per_slot : (s + 1) * per_slot]) for s in range(slots)]


@contextmanager
def slot_environment(devices: str | None) -> Iterator[None]:
    """`CUDA_VISIBLE_DEVICES` set for a child started inside (a spawned process copies the
    environment when it starts, before it imports anything that could initialise CUDA)."""
    if devices is None:
        yield
        return
    old = os.environ.get(ENV)
    os.environ[ENV] = devices
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old
