"""--gpus-per-slot: each slot process gets its own CUDA_VISIBLE_DEVICES.

There is no GPU here: a fake `nvidia-smi` on PATH lists four, which is what the count
reads; the real scheduler spawns real slot processes, and each Worker reports the
devices it was started with (and those a child process of its own inherits, as the sealed
evaluator, launched with the slot's environment, does).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rsi_master.errors import RsiMasterError
from rsi_master.orchestra import PlainDisplay, RunSpec, Scheduler, load_graph, start_run
from rsi_master.orchestra._gpus import assign_devices, visible_gpus

from .helpers import FillMain


def fake_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "nvidia-smi"
    lines = "".join(f'echo "GPU {i}: Fake H200 (UUID: GPU-{i:04d})"\n' for i in range(n))
    script.write_text(f"#!/bin/sh\n{lines}")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


class DevicesWorker:
    """Reports the devices its slot process got, and those a child of it inherits."""

    def run(self, ctx: Any) -> None:
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(os.environ.get('CUDA_VISIBLE_DEVICES'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        own = os.environ.get("CUDA_VISIBLE_DEVICES")
        ctx.call("worker.finalize", {"summary": f"devices={own} child={child}", "claims": [], "candidates": []})


class DevicesMain(FillMain):
    agent = "tests.orchestra.test_gpus:DevicesWorker"

    def on_idle(self, ctx: Any, graph: Any, free_slots: int) -> bool:
        if graph.workers:
            return False
        return super().on_idle(ctx, graph, free_slots)


def test_each_slot_process_gets_its_own_devices(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, monkeypatch, 4)
    from rsi_master.expos import ExpOS
    from rsi_master.orchestra._graph import ORCHESTRA

    expos = ExpOS.create(tmp_path / "run", "knowledge", eval_limit=5)
    expos.record(
        ORCHESTRA,
        "orchestra.start",
        {
            "version": 1,
            "task": "knowledge",
            "budget_s": 60.0,
            "slots": 2,
            "seed": 0,
            "main": "tests.orchestra.test_gpus:DevicesMain",
            "reviewer": "evidence",
            "eval_limit": 5,
            "gpus_per_slot": 2,
        },
    )
    with expos:
        sched = Scheduler(expos, PlainDisplay(), poll_s=0.1)
        sched.start()
        assert sched.drive() == "no work left"
        g = load_graph(expos.reader)
        starts = {e.payload["node"]: e.payload for e in expos.events("orchestra.job.start")}
        assert {n: (p["slot"], p["devices"]) for n, p in starts.items()} == {"s1": (0, "0,1"), "s2": (1, "2,3")}
        summaries = {e.actor.id: e.payload["summary"] for e in expos.events("worker.finalize")}
        assert summaries == {"s1": "devices=0,1 child=0,1", "s2": "devices=2,3 child=2,3"}
        assert all(j.status == "done" for j in g.jobs)
    # The parent's own environment is left as it was.
    assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_devices_come_from_the_parents_own_visible_list(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7,2")
    assert visible_gpus()[0] == ["5", "7", "2"]
    assert assign_devices(3, 1) == ["5", "7", "2"]
    assert assign_devices(1, 3) == ["5,7,2"]
    assert assign_devices(4, 0) is None


def test_more_gpus_than_visible_is_a_clear_error(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, monkeypatch, 3)
    with pytest.raises(RsiMasterError, match=r"--gpus-per-slot 2 with --slots 2 needs 4 GPUs, but nvidia-smi shows 3"):
        assign_devices(2, 2)
    with pytest.raises(RsiMasterError, match="0 or a positive integer"):
        assign_devices(2, -1)
    # Through start_run: refused before anything is written.
    with pytest.raises(RsiMasterError, match="needs 4 GPUs"):
        start_run(RunSpec(task="knowledge", budget="60s", slots=2, gpus_per_slot=2, run_dir=tmp_path / "r"))
    assert not (tmp_path / "r").exists()
    assert not list(tmp_path.glob(".r.creating-*"))


def test_no_nvidia_smi_falls_back_to_torch(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    gpus, source = visible_gpus()
    assert source.startswith("torch") and gpus == []  # the CPU build of torch sees none
    with pytest.raises(RsiMasterError, match=r"needs 1 GPUs, but torch \(no nvidia-smi on PATH\) shows 0"):
        assign_devices(1, 1)


def test_cli_flag_and_env(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, monkeypatch, 1)
    env = {**os.environ, "RSI_MASTER_GPUS_PER_SLOT": "1"}
    cmd = [sys.executable, "-m", "rsi_master.cli", "run", "--task", "knowledge", "--budget", "60s", "--slots", "2"]
    proc = subprocess.run([*cmd, "--dir", str(tmp_path / "r")], capture_output=True, text=True, env=env)
    assert proc.returncode != 0
    assert "needs 2 GPUs, but nvidia-smi shows 1" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r").exists()
