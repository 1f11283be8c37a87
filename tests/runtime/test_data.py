from __future__ import annotations

import json

import pytest

from rsi_master.runtime import InvalidParameterError, dedup, filter_data, generate, mix
from rsi_master.runtime._jsonl import read_jsonl


def test_generate_writes_rows_with_provenance_and_is_deterministic(tmp_path):
    a = generate("arithmetic", "answer_only", {"max_digits": 2}, 7, 50, tmp_path / "a.jsonl")
    b = generate("arithmetic", "answer_only", {"max_digits": 2}, 7, 50, tmp_path / "b.jsonl")
    assert a.n_rows == 50 and a.sha256 == b.sha256
    row = read_jsonl(a.path)[0]
    assert {"prompt", "completion", "check", "task", "family", "id"} <= set(row)
    assert row["id"] == "arithmetic/answer_only/7/0"
    assert a.spec["params"]["max_digits"] == 2 and "min_digits" in a.spec["params"]


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("nope", "answer_only", {}, 0, 5), "unknown task"),
        (("arithmetic", "nope", {}, 0, 5), "unknown generator family"),
        (("arithmetic", "answer_only", {"colour": 1}, 0, 5), "unknown parameter"),
        (("arithmetic", "answer_only", {"max_digits": 99}, 0, 5), "max_digits"),
        (("arithmetic", "answer_only", {}, 0, -5), "n must be"),
        (("arithmetic", "answer_only", {}, 0, 0), "n must be"),
    ],
)
def test_generate_rejects_bad_input(tmp_path, args, fragment):
    with pytest.raises(InvalidParameterError, match=fragment):
        generate(*args, tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


def test_filter_verifies_and_decontaminates(tmp_path, toy):
    from rsi_master.tasks import get_task

    src = generate("arithmetic", "answer_only", {}, 1, 40, tmp_path / "a.jsonl")
    rows = read_jsonl(src.path)
    task = get_task("arithmetic")
    leaked = task.eval_items("dev")[0]
    rows[0]["completion"] = " #### -1\n\n"  # wrong answer: the checker rejects it
    rows[1]["prompt"] = leaked.prompt  # an evaluation prompt: must be dropped
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = filter_data(tmp_path / "b.jsonl", tmp_path / "c.jsonl", verified_only=True)
    kept = read_jsonl(out.path)
    assert out.n_rows == 38 and all(r["prompt"] != leaked.prompt for r in kept)
    with pytest.raises(InvalidParameterError):
        filter_data(src.path, tmp_path / "d.jsonl", max_chars=-1)


def test_mix_hits_exact_counts_and_dedup_keeps_first(tmp_path):
    a = generate("arithmetic", "answer_only", {}, 1, 30, tmp_path / "a.jsonl")
    b = generate("knowledge", "answer_only", {}, 1, 10, tmp_path / "b.jsonl")
    m = mix([a.path, b.path], [3, 1], 41, 0, tmp_path / "m.jsonl")
    assert m.n_rows == 41 and m.spec["counts"] == [31, 10]
    doubled = tmp_path / "dd.jsonl"
    doubled.write_text((tmp_path / "a.jsonl").read_text() * 2)
    d = dedup(doubled, tmp_path / "d.jsonl")
    assert d.n_rows == 30 and read_jsonl(d.path) == read_jsonl(a.path)
    with pytest.raises(InvalidParameterError):
        mix([a.path], [-1], 5, 0, tmp_path / "x.jsonl")
    with pytest.raises(InvalidParameterError):
        dedup(a.path, tmp_path / "x.jsonl", key="completion")


def test_ops_store_their_output_when_given_a_store(tmp_path):
    from rsi_master.artifacts import ArtifactStore

    store = ArtifactStore(tmp_path / "store")
    r = generate("arithmetic", "restate", {}, 0, 10, tmp_path / "a.jsonl", store=store)
    assert r.digest == r.sha256 and store.has(r.digest)


def test_jsonl_rows_with_unicode_line_separators_read_back_whole(tmp_path):
    """JSON strings may hold U+2028, U+2029, U+0085, form feeds and the like raw (the writer
    does not escape them): a row is cut at "\\n" only, so it reads back as written."""
    from rsi_master.runtime._jsonl import jsonl_bytes, parse_jsonl, write_jsonl

    rows = [{"prompt": f"a{c}b", "completion": f" c{c}d\n\n"} for c in "\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e\r"]
    assert parse_jsonl(jsonl_bytes(rows), "rows") == rows
    write_jsonl(tmp_path / "r.jsonl", rows)
    assert read_jsonl(tmp_path / "r.jsonl") == rows
    assert parse_jsonl(b'{"a": 1}\r\n\r\n{"b": 2}\n', "crlf") == [{"a": 1}, {"b": 2}]
    with pytest.raises(ValueError, match="bad:2: not valid JSON"):
        parse_jsonl(b'{"a": 1}\n{"b":\n', "bad")
