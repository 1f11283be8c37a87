"""setup.sh picks the torch build: CUDA where nvidia-smi lists a GPU, CPU otherwise, or as told.

Run in its dry-run mode (prints the choice and the commands, installs nothing) with a fake
`nvidia-smi` on PATH standing for a GPU machine.
"""

from __future__ import annotations

import errno
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _setup(tmp_path: Path, *args: str, gpus: int | None = None, smi_exit: int = 0, **env: str):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if gpus is not None:
        lines = "".join(f'echo "GPU {i}: Fake (UUID: GPU-{i})"\n' for i in range(gpus))
        (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\n{lines}exit {smi_exit}\n")
        (bin_dir / "nvidia-smi").chmod(0o755)
        _wait_until_executable(bin_dir / "nvidia-smi")
    # Only what the script needs from the system, and no nvidia-smi of the machine's own.
    path = f"{bin_dir}:/usr/bin:/bin"
    full = {"PATH": path, "HOME": str(tmp_path), **env}
    return subprocess.run(["bash", str(ROOT / "setup.sh"), *args], capture_output=True, text=True, env=full)


def _wait_until_executable(path: Path) -> None:
    """A process forked by another thread of this test process between the file's open and its
    close holds a copy of the writing descriptor until it execs, and meanwhile executing the file
    fails with ETXTBSY ("Text file busy"): setup.sh would then see no working nvidia-smi."""
    deadline = time.monotonic() + 10
    while True:
        try:
            subprocess.run([str(path)], capture_output=True, check=False)
            return
        except OSError as exc:
            if exc.errno != errno.ETXTBSY or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_cuda_build_where_nvidia_smi_lists_a_gpu(tmp_path):
    out = _setup(tmp_path, "--dry-run", gpus=2)
    assert out.returncode == 0, out.stderr
    assert "torch: cuda (nvidia-smi lists a GPU)" in out.stdout
    assert "+ .venv/bin/python -m pip install -q torch==2.13.0" in out.stdout
    assert "torch.version.cuda" in out.stdout  # the installed wheel is checked to be a CUDA one


def test_a_gpu_listing_still_being_written_when_the_first_gpu_is_found(tmp_path):
    # A machine with several GPUs: nvidia-smi is still writing the second line when the first one
    # matches. Searching the pipe (`| grep -q` under pipefail) lost the race to SIGPIPE and chose
    # the CPU build; the listing is read whole first.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text('#!/bin/sh\necho "GPU 0: Fake (UUID: GPU-0)"\nsleep 0.3\necho "GPU 1: Fake (UUID: GPU-1)"\n')
    smi.chmod(0o755)
    _wait_until_executable(smi)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run(["bash", str(ROOT / "setup.sh"), "--dry-run"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "torch: cuda (nvidia-smi lists a GPU)" in out.stdout


def test_cpu_build_without_nvidia_smi_or_when_it_fails(tmp_path):
    for i, kw in enumerate(({}, {"gpus": 1, "smi_exit": 9}, {"gpus": 0})):
        (tmp_path / str(i)).mkdir()
        out = _setup(tmp_path / str(i), "--dry-run", **kw)  # type: ignore[arg-type]
        assert out.returncode == 0, out.stderr
        assert "torch: cpu (no working nvidia-smi)" in out.stdout
        assert "+ .venv/bin/python -m pip install -q torch==2.13.0\n" in out.stdout
        assert "torch.version.cuda" not in out.stdout


def test_override_and_index(tmp_path):
    out = _setup(tmp_path, "--dry-run", gpus=4, RSI_MASTER_TORCH="cpu")
    assert "torch: cpu (RSI_MASTER_TORCH)" in out.stdout
    out = _setup(tmp_path, "--dry-run", RSI_MASTER_TORCH="cuda", RSI_MASTER_TORCH_INDEX="https://wheels.example/cu")
    assert "torch: cuda (RSI_MASTER_TORCH)" in out.stdout
    assert "torch==2.13.0 --index-url https://wheels.example/cu" in out.stdout


def test_gpu_extra_on_request(tmp_path):
    out = _setup(tmp_path, "--dry-run", "--gpu", gpus=1)
    assert "extras: all,gpu" in out.stdout and "pip install -q -e .[all,gpu]" in out.stdout
    assert "pip install -q -e .[all]\n" in _setup(tmp_path, "--dry-run", gpus=1).stdout


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("--dry-run", "--fast"), {}, "unknown option '--fast'"),
        (("--dry-run",), {"RSI_MASTER_TORCH": "rocm"}, "RSI_MASTER_TORCH must be cpu or cuda, got 'rocm'"),
    ],
)
def test_bad_input_is_one_line(tmp_path, args, env, message):
    out = _setup(tmp_path, *args, **env)
    assert out.returncode != 0 and message in out.stderr
