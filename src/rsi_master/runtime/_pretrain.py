"""Deterministic pretraining of a tiny base model on the tasks' free-form text.

A plain torch loop (no Trainer): packed fixed-length blocks, AdamW, cosine schedule.
It is the analogue of a base model's pretraining: the model sees every task's domain
(numbers, JSON, list programs, facts) but never the tasks' prompt/answer formats, so
it scores near zero until post-trained.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rsi_master.runtime import _model, _tokenizer
from rsi_master.runtime._digest import dir_digest, sha256_bytes


@dataclass(frozen=True)
class PretrainSpec:
    """Pretraining recipe; saved next to the model so the build can be reproduced."""

    seed: int = 0
    docs_per_task: int = 30000  # enough text that one pass is ~1 epoch of the steps below
    block_size: int = 256
    batch_size: int = 16
    steps: int = 1500
    lr: float = 3e-3
    warmup_steps: int = 100
    weight_decay: float = 0.01
    threads: int = 2  # fixed: float reduction order (and so the weights) depends on it


def build_corpus(tasks: Iterable[Any], seed: int, docs_per_task: int) -> list[str]:
    """Every task's `pretrain_text`, interleaved deterministically."""
    import random

    docs: list[str] = []
    for i, task in enumerate(tasks):
        docs.extend(task.pretrain_text(seed + 1000 * i, docs_per_task))
    random.Random(seed).shuffle(docs)
    return docs


def _encode_blocks(docs: list[str], tokenizer: Any, block_size: int) -> Any:
    import torch

    # Each document starts with <bos> (the tokenizer adds it) and ends with <eos>, then
    # everything is packed into contiguous blocks: no padding is wasted.
    ids: list[int] = []
    eos = tokenizer.eos_token_id
    for enc in tokenizer(docs)["input_ids"]:
        ids.extend(enc)
        ids.append(eos)
    n_blocks = len(ids) // block_size
    return torch.tensor(ids[: n_blocks * block_size], dtype=torch.long).view(n_blocks, block_size)


def pretrain(
    tasks: Iterable[Any],
    out_dir: str | Path,
    spec: PretrainSpec = PretrainSpec(),
    arch: _model.TinyLlamaSpec = _model.TinyLlamaSpec(),
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Pretrain from scratch and write an HF model directory; returns the build record."""
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(spec.seed)
    torch.set_num_threads(spec.threads)
    torch.use_deterministic_algorithms(True)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer.build_tokenizer()
    docs = build_corpus(tasks, spec.seed, spec.docs_per_task)
    corpus_digest = sha256_bytes("\x00".join(docs).encode("utf-8"))
    blocks = _encode_blocks(docs, tokenizer, spec.block_size)
    log(f"corpus: {len(docs)} docs, {blocks.numel()} tokens, {blocks.shape[0]} blocks")

    model = LlamaForCausalLM(_model.build_config(arch))
    model.generation_config = _model.build_generation_config()
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": spec.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=spec.lr,
        betas=(0.9, 0.95),
    )

    def lr_at(step: int) -> float:
        if step < spec.warmup_steps:
            return spec.lr * (step + 1) / spec.warmup_steps
        frac = (step - spec.warmup_steps) / max(1, spec.steps - spec.warmup_steps)
        return spec.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))

    gen = torch.Generator().manual_seed(spec.seed)
    order = torch.randperm(blocks.shape[0], generator=gen)
    model.train()
    t0 = time.time()
    losses: list[float] = []
    pos = 0
    for step in range(spec.steps):
        if pos + spec.batch_size > len(order):
            order = torch.randperm(blocks.shape[0], generator=gen)
            pos = 0
        batch = blocks[order[pos : pos + spec.batch_size]]
        pos += spec.batch_size
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        loss = model(input_ids=batch, labels=batch).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % 100 == 0 or step == spec.steps - 1:
            log(f"step {step:5d}/{spec.steps} loss {loss.item():.3f} ({time.time() - t0:.0f}s)")

    model.eval()
    model.save_pretrained(str(out), safe_serialization=True)
    tokenizer.save_pretrained(str(out))
    record = {
        "digest": dir_digest(out),
        "n_params": n_params,
        "pretrain": asdict(spec),
        "arch": arch.to_dict(),
        "corpus_docs": len(docs),
        "corpus_tokens": int(blocks.numel()),
        "corpus_digest": corpus_digest,
        "final_loss": sum(losses[-50:]) / len(losses[-50:]),
        "train_seconds": round(time.time() - t0, 1),
    }
    (out.parent / f"{out.name}.build.json").write_text(json.dumps(record, indent=2) + "\n")
    return record
