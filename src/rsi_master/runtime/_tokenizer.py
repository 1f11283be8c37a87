"""A character-level tokenizer: one token per printable ASCII character or newline.

The preliminary CPU study used one token per character; it keeps the vocabulary (and so
the embedding) tiny and makes every digit and bracket its own token, which is what
tasks that copy values from the prompt need.
"""

from __future__ import annotations

from typing import Any

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, BOS, EOS, UNK)
# Newline first, then printable ASCII (space .. tilde).
CHARSET: tuple[str, ...] = ("\n", *(chr(c) for c in range(32, 127)))
MODEL_MAX_LENGTH = 1024


def vocab() -> dict[str, int]:
    """Token -> id; special tokens take ids 0..3 so pad is 0."""
    return {tok: i for i, tok in enumerate((*SPECIAL_TOKENS, *CHARSET))}


def build_tokenizer() -> Any:
    """A `PreTrainedTokenizerFast` that prepends `<bos>` and splits into characters."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    v = vocab()
    tok = Tokenizer(models.WordLevel(vocab=v, unk_token=UNK))
    # `[\s\S]` rather than `.` so that newline is its own token too.
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    # Fuse concatenates pieces; the default WordLevel decode would join them with spaces.
    tok.decoder = decoders.Fuse()
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, v[BOS])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        model_max_length=MODEL_MAX_LENGTH,
        padding_side="right",
        clean_up_tokenization_spaces=False,
    )
