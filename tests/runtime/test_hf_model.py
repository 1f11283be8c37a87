"""`--model`: any local Hugging Face causal LM (here Qwen2 and GPT-2 layouts built at test
time) resolves by directory or cached repository id, digests every defining file, refuses
bad input in one line, and trains and evaluates through the runtime as the shipped model does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rsi_master.runtime import (
    ModelInputError,
    base_model_digest,
    dir_digest,
    evaluate,
    generate,
    resolve_model,
    train,
)
from rsi_master.tasks import PUBLIC_SEAL_KEY
from tests.helpers import hf_cache_layout, tiny_hf_model
from tests.runtime.conftest import TOY_SOURCE
from tests.runtime.toytask import ChatToyTask, ToyTask

pytestmark = [
    # PEFT 0.21 and TRL 1.16 read transformers 5's deprecated `is_gradient_checkpointing`; not ours to fix.
    pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"),
]

QUICK = {"learning_rate": 1e-2, "batch_size": 16, "max_steps": 6}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf")
    return {arch: tiny_hf_model(root, arch) for arch in ("qwen2", "gpt2")}


@pytest.fixture(scope="module")
def toy_rows(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("data") / "toy.jsonl"
    generate(ToyTask(), "plain", {"length": 4}, 0, 96, out)
    return out


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert msg and "\n" not in msg and "Traceback" not in msg
    return msg


# -- resolving -----------------------------------------------------------------------------
def test_shipped_model_is_the_default_with_its_recorded_digest():
    s = resolve_model(None)
    assert s.is_shipped and s.architecture == "llama" and s.tree_digest == base_model_digest()
    assert s.tree_digest == dir_digest(s.path)


def test_directory_and_cached_repo_id_resolve_to_the_same_model(models, tmp_path, monkeypatch):
    by_path = resolve_model(models["qwen2"])
    assert by_path.architecture == "qwen2" and by_path.repo_id is None and not by_path.is_shipped
    assert set(by_path.files) == {
        "chat_template.jinja",
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    }
    assert by_path.tree_digest == dir_digest(models["qwen2"])  # the store's rule: a stored copy matches
    cache = tmp_path / "hub"
    snapshot = hf_cache_layout(models["qwen2"], cache, "tiny-org/tiny-qwen")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    by_id = resolve_model("tiny-org/tiny-qwen")
    assert by_id.repo_id == "tiny-org/tiny-qwen" and by_id.path == snapshot
    assert by_id.tree_digest == by_path.tree_digest and by_id.files == by_path.files
    assert resolve_model("tiny-org/tiny-qwen@main").tree_digest == by_path.tree_digest
    # HF_HOME is the other way to name the cache.
    monkeypatch.delenv("HF_HUB_CACHE")
    home = tmp_path / "hfhome"
    shutil.move(str(cache), str(home / "hub"))
    monkeypatch.setenv("HF_HOME", str(home))
    assert resolve_model("tiny-org/tiny-qwen").tree_digest == by_path.tree_digest


def test_digest_covers_every_defining_file_and_nothing_else(models, tmp_path):
    model = shutil.copytree(models["gpt2"], tmp_path / "m")
    base = resolve_model(model).tree_digest
    (model / "README.md").write_text("a model card edit is not a new model\n")
    (model / "original").mkdir()
    (model / "original" / "notes.txt").write_text("x")
    # Weights transformers does not read (it prefers model.safetensors) are not the model either.
    shutil.copyfile(model / "model.safetensors", model / "consolidated.safetensors")
    shutil.copyfile(model / "model.safetensors", model / "pytorch_model.bin")
    assert resolve_model(model).tree_digest == base
    for name in sorted(resolve_model(model).files):
        f = model / name
        before = f.read_bytes()
        # Still valid content (the tokenizer and config must load): a trailing newline, or one flipped weight byte.
        f.write_bytes(before[:-1] + bytes([before[-1] ^ 1]) if name.endswith(".safetensors") else before + b"\n")
        assert resolve_model(model).tree_digest != base, name
        f.write_bytes(before)
    assert resolve_model(model).tree_digest == base


# -- bad input: one line, before anything is written ----------------------------------------
def test_bad_models_are_one_line_errors(models, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    with pytest.raises(ModelInputError) as e:
        resolve_model(tmp_path / "nowhere")
    assert "does not exist" in _one_line(e)

    def variant(name: str, drop: tuple[str, ...] = (), config: dict | None = None) -> Path:
        d = shutil.copytree(models["qwen2"], tmp_path / name)
        for f in drop:
            (d / f).unlink()
        if config is not None:
            (d / "config.json").write_text(json.dumps(config))
        return d

    cases = {
        "no config.json": variant("noconfig", drop=("config.json",)),
        "no weights": variant("noweights", drop=("model.safetensors",)),
        "no tokenizer": variant("notok", drop=("tokenizer.json",)),
        "'nosucharch' is not a causal LM": variant("arch", config={"model_type": "nosucharch"}),
        "'t5' is not a causal LM": variant("t5", config={"model_type": "t5"}),
    }
    for expected, path in cases.items():
        with pytest.raises(ModelInputError) as e:
            resolve_model(path)
        assert expected in _one_line(e), (expected, str(e.value))
    sharded = variant("sharded")
    (sharded / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "model.safetensors", "b": "model-00002-of-00002.safetensors"}})
    )
    with pytest.raises(ModelInputError) as e:
        resolve_model(sharded)
    assert "model-00002-of-00002.safetensors" in _one_line(e)
    for repo in ("tiny-org/not-cached", "not-cached"):
        with pytest.raises(ModelInputError) as e:
            resolve_model(repo)
        assert "not in the local Hugging Face cache" in _one_line(e) and "nothing is downloaded" in str(e.value)


def test_damaged_weights_are_found_from_their_structure(models, tmp_path):
    """A safetensors file cut short, padded or with a garbage header, and a torch zip cut
    short, are refused by resolve_model from a few bytes each, naming the file inside the model."""
    import torch

    from rsi_master.runtime import check_weight_file

    good = (models["qwen2"] / "model.safetensors").read_bytes()
    variants = {
        "cut": good[: len(good) // 2],
        "padded": good + b"\0" * 16,
        "headless": b"\xff" * 8 + good[8:],
        "tiny": good[:5],
    }
    for name, data in variants.items():
        d = shutil.copytree(models["qwen2"], tmp_path / name)
        (d / "model.safetensors").write_bytes(data)
        with pytest.raises(ModelInputError) as e:
            resolve_model(d)
        assert f"model {d}: weight file model.safetensors is damaged" in _one_line(e), (name, str(e.value))
    assert check_weight_file(models["qwen2"] / "model.safetensors", "model.safetensors") is None
    torch.save({"w": torch.zeros(64)}, tmp_path / "pytorch_model.bin")
    assert check_weight_file(tmp_path / "pytorch_model.bin", "pytorch_model.bin") is None
    cut = tmp_path / "cut.bin"
    cut.write_bytes((tmp_path / "pytorch_model.bin").read_bytes()[:-40])
    assert "damaged" in (check_weight_file(cut, "pytorch_model.bin") or "")


# -- training and the sealed evaluator ---------------------------------------------------
# qwen2 trains and is evaluated in the chat-template and DPO tests below, so its SFT and LoRA
# here are `slow`; gpt2's stay in the default run.
@pytest.mark.parametrize("method", ["sft", "lora"])
@pytest.mark.parametrize("arch", [pytest.param("qwen2", marks=pytest.mark.slow), "gpt2"])
def test_sft_and_lora_train_and_the_sealed_evaluator_scores(arch, method, models, toy_rows, tmp_path):
    parent = models[arch]
    r = train(toy_rows, tmp_path / method, {"method": method, **QUICK}, parent=parent)
    ckpt = Path(r.checkpoint_dir)
    assert r.steps == 6 and r.final_loss is not None and r.parent_digest == dir_digest(parent)
    # Tokenizer, chat template and generation config are the parent's, byte for byte.
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json"):
        assert (ckpt / name).read_bytes() == (parent / name).read_bytes(), name
    assert json.loads((ckpt / "config.json").read_text())["model_type"] == arch
    e = evaluate(ckpt, "toytask:ToyTask", "dev", seal_key=PUBLIC_SEAL_KEY, extra_sources=[TOY_SOURCE], max_samples=4)
    assert len(e.samples) == 4 and 0.0 <= e.score <= 1.0 and e.checkpoint_digest == dir_digest(ckpt)
    assert all(";" not in s.output for s in e.samples)


def test_lora_targets_follow_peft_defaults_per_architecture(models):
    from transformers import AutoModelForCausalLM

    from rsi_master.runtime._model import base_model_dir
    from rsi_master.runtime._sft import LORA_TARGETS, lora_targets

    def load(p: Path):
        return AutoModelForCausalLM.from_pretrained(str(p), local_files_only=True)

    assert lora_targets(load(models["qwen2"]), "default") == ["q_proj", "v_proj"]
    assert lora_targets(load(models["gpt2"]), "default") == ["c_attn"]
    assert lora_targets(load(base_model_dir()), "default") == list(LORA_TARGETS)  # the shipped model: unchanged
    assert lora_targets(load(models["qwen2"]), "all-linear") == "all-linear"


def test_chat_task_goes_through_the_models_chat_template(models, tmp_path):
    """A chat task: training rows and evaluator prompts are the model's own chat turns, rendered alike."""
    from transformers import AutoTokenizer

    from rsi_master.runtime import _evaluator
    from rsi_master.runtime._chat import chat_format

    tok = AutoTokenizer.from_pretrained(str(models["qwen2"]), local_files_only=True)
    fmt = chat_format(tok)
    assert fmt.turn_end == "<|im_end|>\n"
    prompts = [i.prompt for i in ChatToyTask().eval_items("dev")[:3]]
    assert _evaluator._chat_prompts(tok, prompts) == [fmt.prompt(p) for p in prompts]
    assert fmt.prompt("rev ab\n=") == "<|im_start|>user\nrev ab\n=<|im_end|>\n<|im_start|>assistant\n"

    rows = tmp_path / "chat.jsonl"
    generate(ChatToyTask(), "plain", {"length": 4}, 0, 64, rows)
    spec = {"method": "sft", "task": "toy", **QUICK}
    r = train(rows, tmp_path / "sft", spec, parent=models["qwen2"], task=ChatToyTask())
    e = evaluate(
        r.checkpoint_dir,
        "toytask:ChatToyTask",
        "dev",
        seal_key=PUBLIC_SEAL_KEY,
        extra_sources=[TOY_SOURCE],
        max_samples=4,
    )
    assert len(e.samples) == 4


def test_a_chat_task_on_a_model_without_a_chat_template_is_a_clear_refusal(tmp_path):
    from rsi_master.runtime import CheckpointLoadError, InvalidParameterError

    rows = tmp_path / "chat.jsonl"
    generate(ChatToyTask(), "plain", {"length": 4}, 0, 8, rows)
    spec = {"method": "sft", "task": "toy", **QUICK}
    plain = tiny_hf_model(tmp_path, "gpt2", name="nochat", chat=False)
    with pytest.raises(InvalidParameterError, match="no chat template"):
        train(rows, tmp_path / "nochat-sft", spec, parent=plain, task=ChatToyTask())
    with pytest.raises(CheckpointLoadError, match="no chat template"):
        evaluate(plain, "toytask:ChatToyTask", "dev", seal_key=PUBLIC_SEAL_KEY, extra_sources=[TOY_SOURCE])


def test_dpo_and_grpo_run_on_another_architecture(models, toy_rows, tmp_path):
    toy = ToyTask()
    r = train(
        toy_rows,
        tmp_path / "dpo",
        {"method": "dpo", "task": "toy", **QUICK, "max_steps": 2},
        parent=models["qwen2"],
        task=toy,
    )
    assert r.steps == 2
    grpo = {"method": "grpo", "task": "toy", "learning_rate": 1e-3, "batch_size": 4, "max_steps": 1}
    grpo |= {"grpo_num_generations": 2, "grpo_max_completion_length": 4}
    r = train(toy_rows, tmp_path / "grpo", grpo, parent=models["gpt2"], task=toy)
    assert r.steps == 1


def test_gradient_checkpointing_is_a_training_knob(models, toy_rows, tmp_path):
    from rsi_master.runtime import make_spec
    from rsi_master.runtime._trainer_args import base_args

    on = make_spec(method="sft", gradient_checkpointing=True)
    args = base_args(on, tmp_path, 100)
    assert args["activation_checkpointing"] is True and args["use_cpu"] is True and args["bf16"] is False
    assert base_args(make_spec(method="sft"), tmp_path, 100)["activation_checkpointing"] is False
    r = train(
        toy_rows, tmp_path / "gc", {"method": "sft", **QUICK, "gradient_checkpointing": True}, parent=models["qwen2"]
    )
    assert r.steps == 6


def test_device_settings_choose_cpu_here_and_can_be_forced(monkeypatch):
    import torch

    from rsi_master.runtime import InvalidParameterError, device_settings

    s = device_settings()
    assert s.device == ("cuda" if torch.cuda.is_available() else "cpu")
    monkeypatch.setenv("RSI_MASTER_DEVICE", "cpu")
    assert device_settings().device == "cpu" and device_settings().bf16 is False
    monkeypatch.setenv("RSI_MASTER_DEVICE", "tpu")
    with pytest.raises(InvalidParameterError, match="RSI_MASTER_DEVICE"):
        device_settings()


def test_pipeline_trains_a_cached_repo_id(models, toy_rows, tmp_path, monkeypatch, capsys):
    """`rsi-master train --parent ID`: a model from the local HF cache (links into blobs) trains."""
    from rsi_master.cli._main import main

    cache = tmp_path / "hub"
    hf_cache_layout(models["gpt2"], cache, "tiny-org/tiny-gpt2")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    out = tmp_path / "out"
    argv = ["train", "--data", str(toy_rows), "--out", str(out), "--parent", "tiny-org/tiny-gpt2", "--max-steps", "2"]
    assert main(argv) == 0, capsys.readouterr()
    config = json.loads((out / "train_config.json").read_text())
    assert config["parent_digest"] == resolve_model("tiny-org/tiny-gpt2").tree_digest
    assert main([*argv[:4], str(tmp_path / "out2"), "--parent", "tiny-org/missing", "--max-steps", "2"]) == 2
    assert "not in the local Hugging Face cache" in capsys.readouterr().err
    assert not (tmp_path / "out2").exists()


def test_sharded_weights_resolve_and_train(models, toy_rows, tmp_path):
    from transformers import AutoModelForCausalLM

    sharded = shutil.copytree(models["qwen2"], tmp_path / "sharded")
    (sharded / "model.safetensors").unlink()
    model = AutoModelForCausalLM.from_pretrained(str(models["qwen2"]), local_files_only=True)
    model.save_pretrained(str(sharded), max_shard_size="40KB")
    source = resolve_model(sharded)
    shards = [n for n in source.files if n.endswith(".safetensors")]
    assert len(shards) > 1 and "model.safetensors.index.json" in source.files
    r = train(toy_rows, tmp_path / "out", {"method": "sft", **QUICK, "max_steps": 1}, parent=sharded)
    assert r.steps == 1 and r.parent_digest == source.tree_digest
    (sharded / shards[-1]).unlink()
    with pytest.raises(ModelInputError, match=shards[-1]):
        resolve_model(sharded)
