"""A run on a user's model (`--model`): the contract pins the model's tree digest, experiments
train from the run's own measured copy, and a model swapped on disk after the freeze (at
its source or in the store) never reaches training."""

from __future__ import annotations

import json
import shutil

import pytest

from rsi_master.errors import RsiMasterError
from rsi_master.expos import ExpOS, load_state
from rsi_master.runtime import ModelInputError, resolve_model
from tests.expos.honest import MAIN, QUICK, W1
from tests.expos.test_redteam import _SWAP, agent, refused, spy_loads
from tests.helpers import tiny_hf_model

pytestmark = [
    pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"),
]


@pytest.fixture
def user_run(tmp_path, monkeypatch):
    monkeypatch.setenv("RSI_MASTER_KEY_DIR", str(tmp_path / "keys"))
    model = tiny_hf_model(tmp_path / "models", "qwen2")
    x = ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=4, key_dir=tmp_path / "keys", model=model)
    yield x, model
    x.close()


def test_contract_pins_the_user_models_tree_digest(user_run):
    x, model = user_run
    c = x.contract
    source = resolve_model(model)
    assert c.base_model_digest == c.base_model_artifact == source.tree_digest
    assert c.base_model_source is not None and c.base_model_source.architecture == "qwen2"
    assert c.base_model_source.spec == str(model) and c.base_model_source.files == source.files
    stored = x.run.store.path(c.base_model_artifact)
    assert sorted(p.name for p in stored.iterdir()) == sorted(source.files)
    tok = (stored / "tokenizer.json").read_bytes()
    import hashlib

    assert c.base_tokenizer_sha256 == hashlib.sha256(tok).hexdigest()
    # The shipped model's contract has no source record: a default run's contract is as before.
    with ExpOS.create(x.run.path.parent / "shipped", "arithmetic", eval_limit=4) as y:
        assert y.contract.base_model_source is None
        assert "base_model_source" not in json.dumps(next(y.run.ledger.events(limit=1)).payload)


@pytest.mark.heavy
def test_experiment_trains_and_evaluates_the_user_model(user_run):
    x, _ = user_run
    x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "user model"})
    families = sorted(f.split("/")[1] for f in x.contract.allowed_generators)
    d = x.call(W1, "data.generate", {"family": families[0], "n": 32, "seed": 1}).dataset
    e = x.call(W1, "experiment.submit", {"dataset": d, "config": QUICK})
    assert e.status == "completed" and e.dev_score is not None, e
    finish = list(x.run.ledger.events(kinds=["experiment.finish"]))[-1].payload
    assert finish["measured"]["parent_checkpoint"] == x.contract.base_model_artifact
    ckpt = x.run.store.path(load_state(x.reader).experiments[e.experiment_id].checkpoint)
    assert json.loads((ckpt / "config.json").read_text())["model_type"] == "qwen2"
    lora = x.call(W1, "experiment.submit", {"dataset": d, "config": {**QUICK, "method": "lora"}})
    assert lora.status == "completed", lora


def test_user_model_swapped_at_its_source_after_freeze_does_not_reach_training(user_run, tmp_path, monkeypatch):
    x, model = user_run
    other = tiny_hf_model(tmp_path / "other", "qwen2")
    import torch
    from safetensors.torch import load_file, save_file

    weights = load_file(str(other / "model.safetensors"))
    save_file({k: torch.randn_like(v) for k, v in weights.items()}, str(other / "model.safetensors"))
    agent(_SWAP, model / "model.safetensors", other / "model.safetensors")  # the agent edits the user's model
    assert resolve_model(model).tree_digest != x.contract.base_model_digest
    x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "after the swap"})
    families = sorted(f.split("/")[1] for f in x.contract.allowed_generators)
    d = x.call(W1, "data.generate", {"family": families[0], "n": 16, "seed": 2}).dataset
    loaded = spy_loads(x, monkeypatch)
    e = x.call(W1, "experiment.submit", {"dataset": d, "config": QUICK})
    assert e.status == "completed" and loaded == [x.contract.base_model_artifact]  # the frozen bytes


def test_user_model_swapped_in_the_store_is_refused(user_run, tmp_path):
    x, _ = user_run
    stored = x.run.store.path(x.contract.base_model_artifact) / "model.safetensors"
    other = tiny_hf_model(tmp_path / "other", "qwen2", name="o")
    import torch
    from safetensors.torch import load_file, save_file

    weights = load_file(str(other / "model.safetensors"))
    save_file({k: torch.randn_like(v) for k, v in weights.items()}, str(other / "model.safetensors"))
    agent(_SWAP, stored, other / "model.safetensors")
    x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "swapped base"})
    families = sorted(f.split("/")[1] for f in x.contract.allowed_generators)
    d = x.call(W1, "data.generate", {"family": families[0], "n": 16, "seed": 3}).dataset
    refused(x, W1, "experiment.submit", {"dataset": d, "config": QUICK}, "weight_provenance")


def test_a_bad_model_writes_no_run(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    model = tiny_hf_model(tmp_path / "models", "gpt2")
    (model / "tokenizer.json").unlink()
    for spec in (model, tmp_path / "missing", "org/not-cached"):
        with pytest.raises(ModelInputError):
            ExpOS.create(tmp_path / "run", "arithmetic", key_dir=tmp_path / "keys", model=spec)
        assert not (tmp_path / "run").exists()


def test_model_changed_between_resolve_and_freeze_is_refused(tmp_path):
    model = tiny_hf_model(tmp_path / "models", "gpt2")
    source = resolve_model(model)
    cfg = model / "config.json"
    cfg.write_text(cfg.read_text() + "\n")
    with pytest.raises(RsiMasterError, match="changed on disk"):
        ExpOS.create(tmp_path / "run", "arithmetic", key_dir=tmp_path / "keys", model=source)
    shutil.rmtree(tmp_path / "run", ignore_errors=True)


def test_cached_repo_id_run_holds_when_the_cache_blob_is_swapped(tmp_path, monkeypatch):
    """A run on a repository id from the HF cache stores the bytes behind the snapshot's links;
    an agent rewriting the cache's blob afterwards changes nothing the run trains from."""
    from tests.helpers import hf_cache_layout

    monkeypatch.setenv("RSI_MASTER_KEY_DIR", str(tmp_path / "keys"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    snapshot = hf_cache_layout(tiny_hf_model(tmp_path / "models", "gpt2"), tmp_path / "hub", "org/tiny-gpt2")
    with ExpOS.create(
        tmp_path / "run", "arithmetic", eval_limit=4, key_dir=tmp_path / "keys", model="org/tiny-gpt2"
    ) as x:
        c = x.contract
        assert c.base_model_source is not None and c.base_model_source.repo_id == "org/tiny-gpt2"
        stored = x.run.store.path(c.base_model_artifact)
        assert not any(p.is_symlink() for p in stored.iterdir())
        blob = (snapshot / "model.safetensors").resolve()
        # Weights rewritten in place, their structure intact (a damaged header is refused at resolve).
        agent("import sys; f = open(sys.argv[1], 'r+b'); f.seek(-64, 2); f.write(b'\\0' * 64)", blob)
        assert resolve_model("org/tiny-gpt2").tree_digest != c.base_model_digest
        x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "cache swap"})
        families = sorted(f.split("/")[1] for f in c.allowed_generators)
        d = x.call(W1, "data.generate", {"family": families[0], "n": 16, "seed": 4}).dataset
        e = x.call(W1, "experiment.submit", {"dataset": d, "config": QUICK})
        assert e.status == "completed", e
