"""Evaluation backends: sealed with the evaluator, so the digest pins the backend and its settings."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest

from rsi_master.runtime import (
    EvalBackend,
    EvaluationError,
    InvalidParameterError,
    check_backend,
    evaluate,
    evaluator_digest,
    make_backend,
    seal_evaluator,
)
from rsi_master.tasks import PUBLIC_SEAL_KEY
from tests.runtime.conftest import TOY_SOURCE, TOY_SPEC

VLLM_ABSENT = importlib.util.find_spec("vllm") is None


def test_backend_and_settings_change_the_digest():
    plain = evaluator_digest([TOY_SOURCE])
    assert plain == evaluator_digest([TOY_SOURCE], backend=EvalBackend())  # the default is transformers
    vllm = evaluator_digest([TOY_SOURCE], backend=make_backend("vllm"))
    bf16 = evaluator_digest([TOY_SOURCE], backend=make_backend("vllm", dtype="bfloat16"))
    assert len({plain, vllm, bf16}) == 3
    # Settings that only vLLM reads do not split transformers seals.
    assert EvalBackend(name="transformers", dtype="float16").seal_bytes() == EvalBackend().seal_bytes()


def test_the_seal_holds_the_backend_file():
    seal, digest = seal_evaluator(extra_sources=[TOY_SOURCE], backend=make_backend("vllm", max_model_len=2048))
    data = json.loads((seal / "backend.json").read_text())
    assert data["name"] == "vllm" and data["max_model_len"] == 2048
    assert (seal / "eval_backends.py").is_file()
    assert digest == evaluator_digest([TOY_SOURCE], backend=make_backend("vllm", max_model_len=2048))


def test_bad_backend_names_and_settings_are_one_line_errors():
    with pytest.raises(InvalidParameterError, match="unknown evaluation backend 'onnx'; known: transformers, vllm"):
        make_backend("onnx")
    with pytest.raises(InvalidParameterError, match="gpu_memory_utilization"):
        make_backend("vllm", gpu_memory_utilization=2.0)


@pytest.mark.skipif(not VLLM_ABSENT, reason="vllm is installed here")
def test_vllm_absent_names_the_gpu_extra():
    with pytest.raises(InvalidParameterError, match=r"vllm is not installed: install the \[gpu\] extra"):
        check_backend(make_backend("vllm"))
    check_backend(make_backend("transformers"))  # always available


@pytest.mark.skipif(not VLLM_ABSENT, reason="vllm is installed here")
def test_a_vllm_seal_refuses_in_the_evaluator_without_vllm(toy_sft):
    """The sealed process itself reads its backend and says what is missing; nothing is scored."""
    with pytest.raises(InvalidParameterError, match=r"\[gpu\] extra"):
        evaluate(
            toy_sft,
            TOY_SPEC,
            "dev",
            seal_key=PUBLIC_SEAL_KEY,
            extra_sources=[TOY_SOURCE],
            backend=make_backend("vllm"),
            max_samples=2,
        )


def test_transformers_result_names_its_backend(toy_sft):
    r = evaluate(toy_sft, TOY_SPEC, "dev", seal_key=PUBLIC_SEAL_KEY, extra_sources=[TOY_SOURCE], max_samples=3)
    assert r.backend == {"name": "transformers"}


def test_an_edited_backend_file_in_a_stored_seal_is_refused(toy_sft, tmp_path):
    """Switching a run's seal to another backend (or settings) is a digest mismatch: nothing runs."""
    seal, digest = seal_evaluator(extra_sources=[TOY_SOURCE])
    copy = tmp_path / "seal"
    shutil.copytree(seal, copy)
    (copy / "backend.json").chmod(0o644)
    (copy / "backend.json").write_text('{"name":"vllm"}\n')
    with pytest.raises(EvaluationError, match="differs from the pinned"):
        evaluate(
            toy_sft,
            TOY_SPEC,
            "dev",
            seal_key=PUBLIC_SEAL_KEY,
            evaluator=copy,
            expected_evaluator_digest=digest,
            max_samples=2,
        )


def test_the_contract_records_the_backend(tmp_path):
    from rsi_master.expos import ExpOS

    with ExpOS.create(tmp_path / "run", "knowledge", eval_limit=3) as expos:
        assert expos.contract.evaluator.backend == {"name": "transformers"}
        seal = expos.run.store.path(expos.contract.evaluator.evaluator_artifact)
        assert json.loads((seal / "backend.json").read_text()) == {"name": "transformers"}
    if VLLM_ABSENT:
        with pytest.raises(InvalidParameterError, match=r"\[gpu\] extra"):
            ExpOS.create(tmp_path / "run2", "knowledge", eval_limit=3, eval_backend="vllm")
        assert not (tmp_path / "run2").exists()
