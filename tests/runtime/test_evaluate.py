from __future__ import annotations

import shutil

import pytest

from rsi_master.runtime import (
    CheckpointLoadError,
    EvaluationError,
    InvalidParameterError,
    evaluate,
    evaluator_digest,
)
from rsi_master.tasks import PUBLIC_SEAL_KEY
from tests.runtime.conftest import TOY_SOURCE, TOY_SPEC

PUBLIC = {"seal_key": PUBLIC_SEAL_KEY}


def _eval(ckpt, **kw):
    return evaluate(ckpt, TOY_SPEC, "dev", extra_sources=[TOY_SOURCE], **PUBLIC, **kw)


def test_record_binds_digests_decoding_and_sample_ids(toy_sft, toy):
    r = _eval(toy_sft)
    items = toy.eval_items("dev")
    assert r.sample_ids == [i.sample_id for i in items] and r.n_expected == len(items)
    assert r.evaluator_digest == evaluator_digest([TOY_SOURCE])
    assert r.decoding["max_new_tokens"] == toy.decoding.max_new_tokens and r.decoding["do_sample"] is False
    assert r.stop == [";"] and len(r.template_digest) == 64
    assert r.score == sum(s.score for s in r.samples) / len(r.samples)
    assert all(";" not in s.output for s in r.samples)  # cut at the stop string


def test_sft_beats_the_untrained_model(toy_sft, tiny_base):
    assert _eval(toy_sft).score > _eval(tiny_base).score


def test_pinned_digest_mismatch_refuses(toy_sft):
    with pytest.raises(EvaluationError, match="refusing"):
        _eval(toy_sft, expected_evaluator_digest="0" * 64)


def test_tampered_seal_refuses_to_run(toy_sft, tmp_path):
    # Edit the sealed copy after sealing: the process re-hashes itself and exits.
    import json
    import subprocess
    import sys

    from rsi_master.runtime import seal_evaluator

    seal, digest = seal_evaluator(extra_sources=[TOY_SOURCE])
    copy = tmp_path / "seal"
    shutil.copytree(seal, copy)
    (copy / "toytask.py").chmod(0o644)
    with open(copy / "toytask.py", "a") as f:
        f.write("\n# edited\n")
    (tmp_path / "req.json").write_text(json.dumps({"checkpoint": str(toy_sft), "task": TOY_SPEC, "split": "dev"}))
    proc = subprocess.run([sys.executable, "-B", str(copy / "evaluator.py"), "--request", str(tmp_path / "req.json"),
                           "--result", str(tmp_path / "out.json"), "--expected-digest", digest], capture_output=True,
                          input=json.dumps({"seal_key": PUBLIC_SEAL_KEY.to_wire()}).encode())
    assert proc.returncode == 3
    assert "refusing" in json.loads((tmp_path / "out.json").read_text())["error"]


def test_checker_crash_is_a_zero_with_reason(toy_sft, tmp_path):
    # A task whose checker raises on every output: scores are 0, the run completes.
    src = TOY_SOURCE.read_text().replace('if got == "boom":', "if True:")
    crashy = tmp_path / "crashytask.py"
    crashy.write_text(src)
    r = evaluate(toy_sft, "crashytask:ToyTask", "dev", extra_sources=[crashy], max_samples=5, **PUBLIC)
    assert r.score == 0.0 and all("checker crashed: RuntimeError" in s.reason for s in r.samples)
    assert r.n_expected == 20 and len(r.sample_ids) == 5


def test_bad_checkpoints_and_splits_are_clear_errors(tmp_path, toy_sft):
    with pytest.raises(CheckpointLoadError, match="not a directory"):
        _eval(tmp_path / "nope")
    with pytest.raises(CheckpointLoadError, match="no config.json"):
        _eval(tmp_path)
    broken = tmp_path / "broken"
    shutil.copytree(toy_sft, broken)
    (broken / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(CheckpointLoadError, match="does not load"):
        _eval(broken)
    with pytest.raises(InvalidParameterError, match="unknown split"):
        evaluate(toy_sft, TOY_SPEC, "test", **PUBLIC)
    with pytest.raises(InvalidParameterError, match="unknown task"):
        evaluate(toy_sft, "nope", "dev", **PUBLIC)


def test_timeout_is_an_error_not_a_hang(toy_sft):
    with pytest.raises(EvaluationError, match="timed out"):
        _eval(toy_sft, timeout_s=0.5)


def test_real_task_with_store(toy_sft, tmp_path):
    from rsi_master.artifacts import ArtifactStore

    store = ArtifactStore(tmp_path / "store")
    r = evaluate(toy_sft, "arithmetic", "dev", store=store, max_samples=8, **PUBLIC)
    assert r.task == "arithmetic" and len(r.samples) == 8 and store.has(r.record_digest)
    assert store.has(r.evaluator_digest)


def test_store_given_by_a_relative_path(toy_sft, tmp_path, monkeypatch):
    # `rsi-master run --dir runs/x` hands the runtime a relative store; the evaluator child
    # runs in its own temporary cwd and must still find the sealed code (a real failure once).
    from rsi_master.artifacts import ArtifactStore

    monkeypatch.chdir(tmp_path)
    store = ArtifactStore("relative/store")
    r = evaluate(toy_sft, "arithmetic", "dev", store=store, max_samples=4, **PUBLIC)
    assert len(r.samples) == 4 and store.has(r.evaluator_digest)
