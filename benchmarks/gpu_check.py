"""GPU check (not in CI): a >=100M-parameter model through ExpOS on one CUDA device.

    .venv/bin/python benchmarks/gpu_check.py                 # on a CUDA machine
    .venv/bin/python benchmarks/gpu_check.py --cpu --tiny    # the same path on a CPU, in a minute or two

Builds a Qwen2-architecture model from a config (random weights, the shipped tokenizer: no
download), hands it to a new ExpOS run as its base model (`--model DIR`), and has a Worker
generate data and run one SFT and one LoRA experiment (the adapter stored bound to its
base) through the experiment service, each scored on `dev` by the run's sealed evaluator
(`transformers`, batched). Then the same checkpoints are scored by a vLLM-backed seal when
vLLM imports and a GPU is there. Prints `key: value` lines: parameters, training
throughput (tokens/s), evaluation throughput (items/s), peak GPU memory (training in this
process, evaluation sampled from nvidia-smi while the evaluator runs), and `verify`/`audit`
of the run. Figures go to docs/benchmarks.md (## GPU check) with the GPU named.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# (hidden, layers, heads, intermediate): ~103M parameters in the blocks, or a test-size model.
SIZES = {"full": (1024, 8, 16, 2816), "tiny": (64, 2, 4, 128)}


def say(key: str, value: Any) -> None:
    if isinstance(value, float):
        value = f"{value:.4g}"
    print(f"{key}: {value}", flush=True)


def build_model(out: Path, size: str, max_len: int) -> int:
    """A random-weight Qwen2 model with the shipped tokenizer; returns its parameter count."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config
    from transformers.utils import logging as hf_logging

    from rsi_master.runtime import base_model_dir

    hf_logging.disable_progress_bar()

    shipped = base_model_dir()
    base_cfg = json.loads((shipped / "config.json").read_text())
    hidden, layers, heads, inter = SIZES[size]
    config = Qwen2Config(
        vocab_size=base_cfg["vocab_size"],
        hidden_size=hidden,
        intermediate_size=inter,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_len,
        tie_word_embeddings=True,
        bos_token_id=base_cfg["bos_token_id"],
        eos_token_id=base_cfg["eos_token_id"],
        pad_token_id=base_cfg["pad_token_id"],
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    out.mkdir(parents=True)
    model.save_pretrained(str(out), safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if (shipped / name).is_file():
            shutil.copyfile(shipped / name, out / name)
    return sum(p.numel() for p in model.parameters())


class GpuMemory:
    """Peak `memory.used` of the GPUs nvidia-smi shows, sampled while a block runs (MiB)."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self.available = shutil.which("nvidia-smi") is not None

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                out = subprocess.run(
                    ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                ).stdout
                self.peak = max([self.peak, *(float(x) for x in out.split() if x.strip())])
            except (OSError, subprocess.SubprocessError, ValueError):
                return
            self._stop.wait(0.2)

    def __enter__(self) -> GpuMemory:
        if self.available:
            self._thread = threading.Thread(target=self._poll, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self.available:
            self._thread.join()


def tokens_per_row(data: Path, model_dir: Path, max_length: int) -> float:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    lengths = [min(max_length, len(tok(r["prompt"] + r["completion"])["input_ids"])) for r in rows]
    return sum(lengths) / max(1, len(lengths))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (RSI_MASTER_DEVICE=cpu)")
    ap.add_argument("--tiny", action="store_true", help="a test-size model and a few steps")
    ap.add_argument("--task", default="arithmetic")
    ap.add_argument("--steps", type=int, default=None, help="optimizer steps per experiment")
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--rows", type=int, default=None, help="rows of generated training data")
    ap.add_argument("--eval-items", type=int, default=None, help="dev items scored")
    ap.add_argument("--keep", action="store_true", help="keep the run directory (printed)")
    args = ap.parse_args()
    if args.cpu:
        os.environ["RSI_MASTER_DEVICE"] = "cpu"
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    steps = args.steps or (4 if args.tiny else 200)
    batch = args.batch_size or (8 if args.tiny else 32)
    rows = args.rows or (64 if args.tiny else steps * batch)
    eval_items = args.eval_items or (8 if args.tiny else 200)
    max_length = 256

    import warnings

    import torch

    # PEFT and TRL still read a property transformers 5 deprecated; not ours, and not a figure.
    warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
    from rsi_master.expos import Budget, Caller, ExpOS, audit
    from rsi_master.rundir import verify_run
    from rsi_master.runtime import device_settings, evaluate, make_backend, operator_seal_key

    dev = device_settings()
    say("device", dev.device)
    say("gpu", torch.cuda.get_device_name(0) if dev.device == "cuda" else "none")
    say("bf16", dev.bf16)
    say("torch", torch.__version__)
    work = Path(tempfile.mkdtemp(prefix="rsi-gpu-check-"))
    os.environ.setdefault("XDG_CACHE_HOME", str(work / "cache"))
    keys = work / "keys"
    try:
        model_dir = work / "model"
        t0 = time.perf_counter()
        params = build_model(model_dir, "tiny" if args.tiny else "full", 2048)
        say("model", f"Qwen2 {'tiny' if args.tiny else 'full'} (random weights, shipped tokenizer)")
        say("parameters", params)
        say("build_s", time.perf_counter() - t0)

        t0 = time.perf_counter()
        x = ExpOS.create(
            work / "run",
            args.task,
            eval_limit=eval_items,
            key_dir=keys,
            model=model_dir,
            budget=Budget(max_train_steps=max(steps, 1), max_rows=max(rows, 1)),
        )
        say("create_run_s", time.perf_counter() - t0)
        main_, worker = Caller("main", "main"), Caller("worker", "w1")
        x.call(main_, "worker.add", {"worker_id": "w1", "task": "gpu check"})
        family = sorted(f.split("/")[1] for f in x.contract.allowed_generators)[0]
        data = x.call(worker, "data.generate", {"family": family, "n": rows, "seed": 1}).dataset
        per_row = tokens_per_row(x.run.store.path(data), model_dir, max_length)
        say("tokens_per_row", per_row)
        config = {"max_steps": steps, "batch_size": batch, "learning_rate": 1e-4, "max_length": max_length}
        runs = {
            "sft": {"method": "sft", "config": config},
            "lora": {"method": "lora", "config": {**config, "lora_r": 16, "lora_save": "adapter"}},
        }
        checkpoints: dict[str, str] = {}
        for name, sub in runs.items():
            if torch.cuda.is_available():
                torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
            with GpuMemory() as mem:
                res = x.call(worker, "experiment.submit", {"dataset": data, **sub})
            wall = time.perf_counter() - t0
            if res.status != "completed":
                say(f"{name}_error", res.error)
                return 1
            checkpoints[name] = res.checkpoint
            [dev_rec] = [e for e in x.events("eval.record") if e.payload["experiment_id"] == res.experiment_id]
            record = json.loads(x.run.store.read_bytes(dev_rec.payload["record_digest"]))
            say(f"{name}_steps", res.steps)
            say(f"{name}_train_s", res.train_seconds)
            say(f"{name}_train_tokens_per_s", res.steps * batch * per_row / max(res.train_seconds, 1e-9))
            say(f"{name}_experiment_wall_s", wall)
            say(f"{name}_checkpoint_mib", _size_mib(x.run.store.path(res.checkpoint)))
            if torch.cuda.is_available():
                say(f"{name}_train_peak_gpu_mib", torch.cuda.max_memory_allocated() / 2**20)
            if mem.available:
                say(f"{name}_peak_gpu_used_mib", mem.peak)
            say(f"{name}_dev_score", res.dev_score)
            say(f"{name}_eval_transformers_items", len(record["samples"]))
            say(f"{name}_eval_transformers_s", record["seconds"])
            say(f"{name}_eval_transformers_items_per_s", len(record["samples"]) / max(record["seconds"], 1e-9))
        say("adapter_bound_to_base", _bound(x, checkpoints["lora"]))

        vllm_ok = importlib.util.find_spec("vllm") is not None and torch.cuda.is_available()
        say("vllm", "available" if vllm_ok else "skipped (not installed or no GPU)")
        if vllm_ok:
            from rsi_master.expos import adapter_base_of

            backend = make_backend("vllm", gpu_memory_utilization=0.6)
            for name, ckpt in checkpoints.items():
                base = adapter_base_of(x, ckpt)
                with GpuMemory() as mem:
                    try:
                        r = evaluate(
                            x.run.store.path(ckpt),
                            args.task,
                            "dev",
                            seal_key=operator_seal_key(keys),
                            backend=backend,
                            base=None if base is None else x.run.store.path(base),
                            max_samples=eval_items,
                            timeout_s=1800,
                        )
                    except Exception as exc:  # a GPU check reports what failed and goes on
                        say(f"{name}_eval_vllm_error", f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
                        continue
                say(f"{name}_eval_vllm_items", len(r.samples))
                say(f"{name}_eval_vllm_s", r.seconds)
                say(f"{name}_eval_vllm_items_per_s", len(r.samples) / max(r.seconds, 1e-9))
                say(f"{name}_eval_vllm_score", r.score)
                if mem.available:
                    say(f"{name}_eval_vllm_peak_gpu_used_mib", mem.peak)
        x.close()
        report = verify_run(work / "run", key_dir=keys)
        say("verify", "ok" if report.ok else f"FAILED: {report.problems[0]}")
        with ExpOS.open(work / "run", key_dir=keys) as y:
            a = audit(y)
        say("audit_run_dir_issues", len(a.run_dir_issues))
        say("audit_executed_violations", a.executed_violations)
        if args.keep:
            say("run_dir", work / "run")
        return 0 if report.ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(keys, ignore_errors=True)


def _size_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def _bound(x: Any, ckpt: str) -> str:
    from rsi_master.expos import adapter_base_of

    base = adapter_base_of(x, ckpt)
    return f"yes ({base[:12]} = the run's base)" if base == x.contract.base_model_artifact else f"no ({base})"


if __name__ == "__main__":
    sys.exit(main())
