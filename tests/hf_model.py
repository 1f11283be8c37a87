"""Test-size Hugging Face models of other architectures than the shipped Llama, built offline.

`tiny_hf_model(tmp_path, arch)` writes a directory with random weights from a config
(Qwen2 or GPT-2 layout, ~40k parameters), a real byte-level BPE tokenizer trained here on
a few strings (no pad token: the runtime must fall back to eos) and a ChatML chat template.
`hf_cache_layout` files such a directory into a Hugging Face hub cache
(`models--org--name/{blobs,snapshots/<rev>,refs/main}`, files as links into blobs) so that a
repository id resolves offline with HF_HUB_CACHE pointed at it. Nothing touches the network.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
_CORPUS = [
    "rev abcd\n=d; rev cafe\n=e; rev bead\n=d; the quick brown fox 0123456789",
    "user assistant system {} [] () : , . ; = + - * / \" ' ? !",
    "abcdef fedcba aa bb cc dd ee ff ab cd ef",
]


def _tokenizer(chat: bool) -> object:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
        chat_template=CHATML if chat else None,
        model_max_length=512,
        clean_up_tokenization_spaces=False,
    )


def tiny_hf_model(tmp_path: Path, arch: str = "qwen2", *, name: str | None = None, chat: bool = True) -> Path:
    """A random-weight causal LM of `arch` ("qwen2" or "gpt2") with its tokenizer, saved under tmp_path."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, GPT2Config, Qwen2Config

    tokenizer = _tokenizer(chat)
    vocab = len(tokenizer)  # type: ignore[arg-type]
    eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")  # type: ignore[attr-defined]
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")  # type: ignore[attr-defined]
    if arch == "qwen2":
        config = Qwen2Config(
            vocab_size=vocab,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=512,
            tie_word_embeddings=True,
            eos_token_id=eos,
            bos_token_id=None,
        )
    elif arch == "gpt2":
        config = GPT2Config(
            vocab_size=vocab, n_embd=32, n_layer=2, n_head=2, n_positions=512, eos_token_id=eos, bos_token_id=eos
        )
    else:
        raise ValueError(f"unknown test architecture {arch!r}")
    from transformers.utils import logging as hf_logging

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    out = tmp_path / (name or f"tiny-{arch}")
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a fixture prints nothing into the output tests read
    try:
        model.save_pretrained(str(out), safe_serialization=True)
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    tokenizer.save_pretrained(str(out))  # type: ignore[attr-defined]
    # A chat model stops at the end of its turn as well as at eos, as released chat models do.
    GenerationConfig(eos_token_id=[eos, im_end], do_sample=False).save_pretrained(str(out))
    return out


def hf_cache_layout(model_dir: Path, cache: Path, repo_id: str = "tiny-org/tiny-model") -> Path:
    """File `model_dir` into a hub cache at `cache` as `repo_id` (revision main); return the snapshot."""
    revision = hashlib.sha1(repo_id.encode()).hexdigest()
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / revision
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    for f in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        data = f.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snapshot / f.relative_to(model_dir)
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, link.parent), link)
    return snapshot
