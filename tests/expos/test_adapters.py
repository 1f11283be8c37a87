"""LoRA adapter checkpoints through ExpOS: stored bound to their base, provenance base + adapter,
a swapped base detected before anything is scored or trained."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rsi_master.expos import Budget, Caller, ExpOS, ToolRefused, audit
from rsi_master.runtime import is_adapter

# The module's run trains two experiments (minutes on two cores); tests/runtime/test_adapter.py
# keeps an adapter's round trip and its binding to the base in the default run.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"),
]

MAIN = Caller("main", "main")
W1 = Caller("worker", "w1")
REVIEWER = Caller("reviewer", "r1")
QUICK = {"max_steps": 3, "batch_size": 8, "learning_rate": 1e-3}


@pytest.fixture(scope="module")
def adapter_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("adapters")
    x = ExpOS.create(root / "run", "arithmetic", eval_limit=4, key_dir=root / "keys", budget=Budget(max_train_steps=50))
    family = sorted(f.split("/")[1] for f in x.contract.allowed_generators)[0]
    x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "lora adapters"})
    data = x.call(W1, "data.generate", {"family": family, "n": 32, "seed": 1}).dataset
    lora = x.call(
        W1,
        "experiment.submit",
        {"dataset": data, "method": "lora", "config": {**QUICK, "lora_r": 4, "lora_save": "adapter"}},
    )
    assert lora.status == "completed", lora
    child = x.call(W1, "experiment.submit", {"parent": lora.experiment_id, "dataset": data, "config": QUICK})
    assert child.status == "completed", child
    yield x, lora, child
    x.close()


def test_adapter_is_stored_bound_to_the_base(adapter_run):
    x, lora, _ = adapter_run
    base = x.contract.base_model_artifact
    assert is_adapter(x.run.store.path(lora.checkpoint))
    [finish] = [e for e in x.events("experiment.finish") if e.payload["experiment_id"] == lora.experiment_id]
    assert finish.payload["adapter_base"] == base
    refs = {(a.digest, a.name) for a in finish.artifacts}
    assert (base, "adapter_base") in refs and (lora.checkpoint, "checkpoint") in refs
    [dev] = [e for e in x.events("eval.record") if e.payload["experiment_id"] == lora.experiment_id]
    assert dev.payload["checkpoint_digest"] == lora.checkpoint and dev.payload["base_digest"] == base


def test_training_from_an_adapter_measures_base_and_adapter(adapter_run):
    x, lora, child = adapter_run
    [finish] = [e for e in x.events("experiment.finish") if e.payload["experiment_id"] == child.experiment_id]
    measured = finish.payload["measured"]
    assert measured["parent_checkpoint"] == lora.checkpoint
    assert measured["parent_base"] == x.contract.base_model_artifact
    assert not is_adapter(x.run.store.path(child.checkpoint))


def test_review_of_an_adapter_and_a_clean_audit(adapter_run):
    x, lora, _ = adapter_run
    x.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "adapter?", "scope": ["w1"]})
    r = x.call(REVIEWER, "eval.review", {"experiment_id": lora.experiment_id})
    assert r is not None
    report = audit(x)
    assert report.run_dir_issues == [] and report.executed_violations == 0


def test_a_swapped_base_under_an_adapter_is_detected(adapter_run, tmp_path):
    """An agent with a shell rewrites the stored base the adapter is bound to: the adapter is
    then refused for evaluation and as a parent (weight provenance), before anything runs."""
    import shutil

    x, lora, _ = adapter_run
    copy = tmp_path / "run"
    shutil.copytree(x.run.path, copy)
    y = ExpOS.open(copy, key_dir=x.run.key_dir)
    try:
        base_tree = y.run.store.path(y.contract.base_model_artifact)
        code = (
            "import os, sys, pathlib; t = pathlib.Path(sys.argv[1]); os.chmod(t, 0o755); "
            "f = t / 'config.json'; data = f.read_bytes(); f.unlink(); f.write_bytes(data + b' ')"
        )
        subprocess.run([sys.executable, "-c", code, str(base_tree)], check=True)
        data = next(iter(y.events("data.generate"))).payload["dataset"]
        with pytest.raises(ToolRefused, match="bound to base"):
            y.call(W1, "experiment.submit", {"parent": lora.experiment_id, "dataset": data, "config": QUICK})
        from rsi_master.expos import evaluate_experiment

        with pytest.raises(ToolRefused, match="bound to base"):
            evaluate_experiment(y, REVIEWER, lora.experiment_id, lora.checkpoint, "review")
        blocked = list(y.events("guard.blocked"))
        assert blocked and blocked[-1].payload["subcategory"] == "weight_provenance"
        assert not [e for e in y.events("experiment.start") if e.seq > blocked[-1].seq]
    finally:
        y.close()
