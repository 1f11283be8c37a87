from __future__ import annotations

from rsi_master.runtime._tokenizer import CHARSET, SPECIAL_TOKENS, build_tokenizer, vocab


def test_vocab_has_specials_first_and_every_printable_char():
    v = vocab()
    assert [v[t] for t in SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert len(v) == len(SPECIAL_TOKENS) + len(CHARSET) == 4 + 96


def test_round_trip_one_token_per_char_with_bos(tmp_path):
    from transformers import AutoTokenizer

    build_tokenizer().save_pretrained(str(tmp_path))
    tok = AutoTokenizer.from_pretrained(str(tmp_path), local_files_only=True)
    text = 'Call: {"name": "f", "arguments": {"x": [1, -2]}}\n#### 42 ~`'
    ids = tok(text)["input_ids"]
    assert ids[0] == tok.bos_token_id and len(ids) == len(text) + 1
    assert tok.decode(ids, skip_special_tokens=True) == text
    assert (tok.pad_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 2, 3)


def test_unknown_characters_map_to_unk():
    tok = build_tokenizer()
    assert tok("é")["input_ids"][1:] == [tok.unk_token_id]
