"""The tiny Llama architecture and the shipped base model's location."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rsi_master.runtime import _tokenizer


@dataclass(frozen=True)
class TinyLlamaSpec:
    """Architecture knobs. The default (~1M parameters) was the fastest learner per
    wall-clock second on a 2-core CPU in the preliminary study; bigger models took
    fewer optimizer steps in the same time and lost."""

    hidden_size: int = 128
    intermediate_size: int = 512
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    max_position_embeddings: int = _tokenizer.MODEL_MAX_LENGTH

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


# A smaller model for fast tests: same code paths, a fraction of the compute.
TEST_SPEC = TinyLlamaSpec(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)


def build_config(spec: TinyLlamaSpec = TinyLlamaSpec()) -> Any:
    from transformers import LlamaConfig

    v = _tokenizer.vocab()
    # rope_theta: the spelling the shipped model was built with (transformers 5 reads it into rope_parameters).
    return LlamaConfig(  # type: ignore[call-arg]
        vocab_size=len(v),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_attention_heads,
        max_position_embeddings=spec.max_position_embeddings,
        pad_token_id=v[_tokenizer.PAD],
        bos_token_id=v[_tokenizer.BOS],
        eos_token_id=v[_tokenizer.EOS],
        tie_word_embeddings=True,
        rope_theta=10000.0,
    )


def build_generation_config() -> Any:
    from transformers import GenerationConfig

    v = _tokenizer.vocab()
    return GenerationConfig(
        bos_token_id=v[_tokenizer.BOS],
        eos_token_id=v[_tokenizer.EOS],
        pad_token_id=v[_tokenizer.PAD],
        do_sample=False,
    )


def models_dir() -> Path:
    return Path(str(resources.files("rsi_master") / "models"))


def base_model_dir(name: str = "base") -> Path:
    """Directory of a shipped model; usable with `from_pretrained` offline."""
    path = models_dir() / name
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"shipped model {name!r} not found at {path}; build it with scripts/build_base_model.py"
        )
    return path


def base_model_record(name: str = "base") -> dict[str, Any]:
    """The build record written next to a shipped model (`<name>.build.json`)."""
    return dict(json.loads((models_dir() / f"{name}.build.json").read_text()))


def base_model_digest(name: str = "base") -> str:
    """The directory digest recorded when the shipped model was built."""
    return str(base_model_record(name)["digest"])
