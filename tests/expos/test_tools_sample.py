"""Train-pool directions through ExpOS: pool SFT data, GRPO prompts, rejection sampling and DPO
pairs from a checkpoint (`data.sample`), each trained; the contamination gate on all of them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rsi_master.expos import TOOLS, Caller, ExpOS, NothingSampled, ToolFailed, ToolInvalid, ToolRefused, generator_views
from rsi_master.expos._catalogue import load
from rsi_master.expos._contamination_gate import check_rows
from rsi_master.runtime import parse_jsonl

MAIN = Caller("main", "main")
W1 = Caller("worker", "w1")
W2 = Caller("worker", "w2")
QUICK = {"max_steps": 1, "batch_size": 4, "learning_rate": 1e-3}

# The shipped model knows nothing of this task: a scorer that passes about half of its samples
# (an even number of characters) makes both passing and failing completions to keep and pair.
SCORER = """
def score(item, output):
    text = output.strip()
    return (1.0, "even") if text and len(text) % 2 == 0 else (0.0, "odd or empty")
"""
WORDS = ("amber", "basalt", "cedar", "delta", "ember", "fjord", "granite", "harbor", "indigo", "juniper")


def _question(i: int) -> str:
    a, b = WORDS[i % 10], WORDS[(i // 10) % 10]
    return f"describe the {a} lantern number {i} that hangs by the {b} gate of the old river town"


def _rows(prefix: str, start: int, n: int) -> list[dict]:
    return [{"id": f"{prefix}-{i}", "question": _question(start + i), "answer": "ok"} for i in range(n)]


def _task_dir(root: Path, *, leak: bool = False) -> Path:
    root.mkdir(parents=True)
    (root / "task.toml").write_text(
        'name = "lanterns"\ncapability = "answer about lanterns"\ntemplate = "Q: {question}\\nA:"\n'
        '[generation]\nmax_new_tokens = 6\nstop = ["\\n"]\n'
        '[scorer]\nkind = "python"\npath = "scorer.py"\nfunction = "score"\n'
        '[splits]\ntrain = "train.jsonl"\n'
    )
    (root / "scorer.py").write_text(SCORER)
    splits = {"dev": _rows("d", 0, 4), "review": _rows("r", 100, 4), "final": _rows("f", 200, 4)}
    splits["train"] = _rows("t", 300, 24)
    if leak:  # a dev item, reworded just enough to be another item by content
        splits["train"].append({"id": "t-leak", "question": "Please " + _question(1) + ".", "answer": "ok"})
    for name, rows in splits.items():
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


@pytest.fixture
def run(tmp_path):
    with ExpOS.create(tmp_path / "run", _task_dir(tmp_path / "task"), eval_limit=4) as x:
        x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "pool directions"})
        yield x


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run in which w1 trained one experiment on pool data: trained once, copied per test."""
    root = tmp_path_factory.mktemp("trained")
    task = _task_dir(root / "task")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RSI_MASTER_KEY_DIR", str(root / "keys"))
        with ExpOS.create(root / "run", task, eval_limit=4, key_dir=root / "keys") as x:
            x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "pool directions"})
            ds = x.call(W1, "data.generate", {"family": "pool", "params": {"keep": "all"}, "n": 8})
            exp = x.call(W1, "experiment.submit", {"dataset": ds.dataset, "config": QUICK})
    assert exp.status == "completed", exp.error
    return root, task, exp


@pytest.fixture
def trained_run(trained, tmp_path, monkeypatch):
    """A copy of the trained run with its own key directory (copies share the run id), and w1's experiment."""
    root, _, exp = trained
    shutil.copytree(root / "run", tmp_path / "run")
    shutil.copytree(root / "keys", tmp_path / "keys")
    monkeypatch.setenv("RSI_MASTER_KEY_DIR", str(tmp_path / "keys"))
    with ExpOS.open(tmp_path / "run", key_dir=tmp_path / "keys") as x:
        yield x, exp


def _stored(x: ExpOS, digest: str) -> list[dict]:
    return parse_jsonl(x.run.store.read_bytes(digest), "dataset")


def test_the_pool_directions_are_the_contracts_generators(run):
    assert run.contract.allowed_generators == [
        "lanterns/pool",
        "lanterns/pool_prompts",
        "lanterns/sample_pairs",
        "lanterns/self_distill",
    ]
    # Each data tool's schema offers the families it takes, with their knobs.
    load()
    gens = generator_views(run)  # the run's own task's families: a task directory's is no built-in
    sample = TOOLS["data.sample"].input_schema(run.contract, gens)["properties"]
    generate = TOOLS["data.generate"].input_schema(run.contract, gens)["properties"]
    assert sample["family"]["enum"] == ["sample_pairs", "self_distill"]
    assert generate["family"]["enum"] == ["pool", "pool_prompts"]
    assert "samples_per_prompt" in sample["params"]["properties"] and "target" in generate["params"]["properties"]


def _pool_directions(x: ExpOS):
    """Pool SFT rows and GRPO prompts."""
    pool = x.call(W1, "data.generate", {"family": "pool", "params": {"keep": "all"}, "n": 12, "seed": 1})
    prompts = x.call(W1, "data.generate", {"family": "pool_prompts", "n": 8, "seed": 1})
    return pool, prompts


def _sampled_from_the_base(x: ExpOS, family: str, params: dict):
    """A `data.sample` round from the base model, and what every sampled row must hold."""
    task = x.protected_task()
    out = x.call(
        W1, "data.sample", {"family": family, "params": {"prompts": 8, "samples_per_prompt": 4, **params}, "n": 40}
    )
    pool_items = {it.id: it for it in task.train_pool()}
    for row in _stored(x, out.dataset):
        item = pool_items[row["item"]]
        assert row["completion"].endswith("\n")
        assert task.scorer.score(item, row["completion"][:-1]).score == 1.0
        if "rejected" in row:
            assert task.scorer.score(item, row["rejected"][:-1]).score == 0.0
    event = x.events("data.sample")[-1]
    assert event.payload["parent"] == "base" and event.payload["parent_checkpoint"] == x.contract.base_model_artifact
    assert {"digest": x.contract.base_model_artifact, "role": "input", "name": "parent"} in [
        dict(a) for a in event.artifacts
    ]
    return out


def _kept_samples(x: ExpOS):
    kept = _sampled_from_the_base(x, "self_distill", {"keep_per_prompt": 2})
    # One rejection-sampling round keeps only what the scorer passes, and says how much that was.
    assert kept.sampled == 32 and 0 < kept.passing < kept.sampled and kept.n_rows <= kept.passing
    return kept


def _preference_pairs(x: ExpOS):
    pairs = _sampled_from_the_base(x, "sample_pairs", {})
    assert all("rejected" in row for row in _stored(x, pairs.dataset))
    return pairs


def _every_direction(x: ExpOS):
    """A dataset of each direction: pool SFT rows, GRPO prompts, kept samples and DPO pairs."""
    return (*_pool_directions(x), _kept_samples(x), _preference_pairs(x))


@pytest.mark.heavy
def test_the_pool_directions_and_a_rejection_sampling_round_make_datasets(run):
    _pool_directions(run)
    _kept_samples(run)


@pytest.mark.heavy
def test_preference_pairs_are_sampled_from_the_base_model(run):
    _preference_pairs(run)


@pytest.mark.heavy
def test_the_next_round_samples_from_a_trained_checkpoint(trained_run):
    x, exp = trained_run  # (of the caller's own lineage)
    again = x.call(
        W1,
        "data.sample",
        {"family": "self_distill", "params": {"prompts": 6}, "n": 10, "seed": 2, "parent": exp.experiment_id},
    )
    ev = x.events("data.sample")[-1]
    assert ev.payload["parent"] == exp.experiment_id and ev.payload["parent_checkpoint"] == exp.checkpoint
    assert again.sampled == 24 and x.projection().state.datasets[again.dataset].op == "data.sample"


# Training each method on them takes minutes; `tests/runtime` trains each method on its own.
# PEFT reads transformers 5's deprecated `is_gradient_checkpointing` (as tests/runtime/test_train.py).
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")
def test_every_direction_makes_a_dataset_and_trains(run):
    x = run
    pool, prompts, kept, pairs = _every_direction(x)
    runs = {
        "sft": x.call(W1, "experiment.submit", {"dataset": pool.dataset, "method": "sft", "config": QUICK}),
        "lora": x.call(
            W1, "experiment.submit", {"dataset": kept.dataset, "method": "lora", "config": {**QUICK, "lora_r": 4}}
        ),
        "dpo": x.call(W1, "experiment.submit", {"dataset": pairs.dataset, "method": "dpo", "config": QUICK}),
        "grpo": x.call(
            W1,
            "experiment.submit",
            {"dataset": prompts.dataset, "method": "grpo", "config": {**QUICK, "grpo_num_generations": 4}},
        ),
    }
    errors = {m: r.error for m, r in runs.items() if r.status != "completed"}
    assert errors == {}
    # The next round samples from the trained checkpoint (the caller's own lineage).
    again = x.call(
        W1,
        "data.sample",
        {"family": "self_distill", "params": {"prompts": 6}, "n": 10, "seed": 2, "parent": runs["sft"].experiment_id},
    )
    ev = x.events("data.sample")[-1]
    assert ev.payload["parent"] == runs["sft"].experiment_id and again.sampled == 24
    assert x.projection().state.datasets[again.dataset].op == "data.sample"


@pytest.mark.heavy
def test_sampling_from_outside_the_lineage_is_a_guards(trained_run):
    x, exp = trained_run
    x.call(MAIN, "worker.add", {"worker_id": "w2", "task": "another"})
    with pytest.raises(ToolRefused, match="outside w2's lineage"):
        x.call(W2, "data.sample", {"family": "self_distill", "n": 4, "parent": exp.experiment_id})
    assert x.events("guard.blocked")[-1].payload["subcategory"] == "weight_provenance"
    with pytest.raises(ToolRefused, match="not a completed experiment"):
        x.call(W1, "data.sample", {"family": "self_distill", "n": 4, "parent": "exp-99999"})


def test_no_data_tool_names_a_protected_split(run):
    load()
    for name, t in TOOLS.items():
        if name.startswith("data."):
            assert not {"split", "splits"} & set(t.input.model_fields), name
    with pytest.raises(ToolInvalid):
        run.call(W1, "data.sample", {"family": "self_distill", "n": 4, "split": "dev"})
    for family in ("dev", "review", "final", "train"):
        with pytest.raises((ToolRefused, ToolInvalid)):
            run.call(W1, "data.generate", {"family": family, "n": 4})
        with pytest.raises(ToolInvalid, match="not a sampling family"):
            run.call(W1, "data.sample", {"family": family, "n": 4})
    with pytest.raises(ToolInvalid, match="not a sampling family"):
        run.call(W1, "data.sample", {"family": "pool", "n": 4})
    with pytest.raises(ToolInvalid, match=r"data\.sample"):
        run.call(W1, "data.generate", {"family": "self_distill", "n": 4})
    with pytest.raises(ToolInvalid, match="samples_per_prompt"):
        run.call(W1, "data.sample", {"family": "self_distill", "n": 4, "params": {"samples_per_prompt": 0}})


def test_a_pool_item_leaked_from_a_protected_split_never_reaches_training(tmp_path):
    with ExpOS.create(
        tmp_path / "run", _task_dir(tmp_path / "task", leak=True), eval_limit=4, allowed_teachers=["hand"]
    ) as x:
        x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "t"})
        task = x.protected_task()
        assert "t-leak" in {it.id for it in task.train_pool()}  # another item by content: the task keeps it
        leak = next(it for it in task.train_pool() if it.id == "t-leak")
        # The gate fails it: a pool family's dataset leaves it out (and says so) ...
        out = x.call(W1, "data.generate", {"family": "pool", "params": {"keep": "all"}, "n": 60, "seed": 0})
        assert x.events("data.generate")[-1].payload["left_out"] >= 1
        assert "t-leak" not in {r["item"] for r in _stored(x, out.dataset)} and out.n_rows == 60
        grpo = x.call(W1, "data.generate", {"family": "pool_prompts", "n": 60})
        assert leak.prompt not in {r["prompt"] for r in _stored(x, grpo.dataset)}
        # ... and the same row written by hand is refused.
        with pytest.raises(ToolRefused, match="overlaps protected"):
            x.call(W1, "data.register", {"source": "hand", "rows": [{"prompt": leak.prompt, "completion": "ok"}]})
        # A preference pair hiding a protected item in its rejected completion fails the gate too.
        dev = task.eval_items("dev")[1]
        pair = {"prompt": "Q: something else\nA:", "completion": "ok\n", "rejected": dev.prompt}
        assert check_rows(task, [pair])["verdict"] == "failed"
        assert check_rows(task, [{**pair, "rejected": "no\n"}])["verdict"] != "failed"


def test_sampling_nothing_that_passes_registers_nothing(tmp_path):
    root = _task_dir(tmp_path / "task")
    (root / "scorer.py").write_text("def score(item, output):\n    return 0.0\n")
    with ExpOS.create(tmp_path / "run", root, eval_limit=4) as x:
        x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "t"})
        with pytest.raises(ToolFailed, match="0 of 8 completions passed") as failure:
            x.call(
                W1, "data.sample", {"family": "self_distill", "params": {"prompts": 4, "samples_per_prompt": 2}, "n": 4}
            )
        # Typed, with the counts a Worker reads to stop sampling a parent that never passes.
        assert isinstance(failure.value, NothingSampled)
        assert (failure.value.parent, failure.value.sampled, failure.value.passing) == ("base", 8, 0)
        assert x.events("data.sample") == [] and x.projection().state.datasets == {}
        # The failed call is on the record: the tool, its caller (the actor) and the reason.
        (failed,) = x.events("tool.failed")
        assert failed.actor.role == "worker" and failed.actor.id == "w1"
        assert failed.payload["tool"] == "data.sample" and "nothing to register" in failed.payload["error"]


@pytest.mark.heavy
def test_sampling_stops_at_the_callers_deadline(run, monkeypatch):
    """The scheduler records each node's deadline; sampling, whose work has no fixed size, is bounded
    by it: with half a second left (less than a fresh interpreter takes to load the model) nothing is
    sampled, the call returns long before an unbounded sampling of 24 prompts x 8 would, and the
    failure is recorded. (A child forked from the warm Python loads the toy model and samples all
    of it in that half second; its deadline is the same `stop_at` and timeout, `test_warm.py`.)"""
    import time

    from rsi_master import _clock
    from rsi_master.runtime._warm import WARM_ENV

    monkeypatch.setenv(WARM_ENV, "0")
    from rsi_master.events import OrchestraJobStart
    from rsi_master.runtime._sample import STOP_GRACE_S

    harness = {"role": "harness", "id": "orchestra"}
    run.record(harness, OrchestraJobStart(node="w1", kind="worker", slot=0, deadline=_clock.now() - 1.0))
    args = {"family": "self_distill", "params": {"prompts": 24, "samples_per_prompt": 8}, "n": 8}
    with pytest.raises(ToolFailed, match="deadline has passed"):
        run.call(W1, "data.sample", args)
    run.record(harness, OrchestraJobStart(node="w1", kind="worker", slot=0, deadline=_clock.now() + 0.5))
    t0 = time.time()
    # The child stops itself before its first batch, or (a loaded machine, still loading the model)
    # is stopped at the deadline and its grace.
    with pytest.raises(ToolFailed, match=r"deadline came before one prompt|stopped at the caller's deadline"):
        run.call(W1, "data.sample", args)
    assert time.time() - t0 < 0.5 + STOP_GRACE_S + 5.0
    assert [e.payload["tool"] for e in run.events("tool.failed")] == ["data.sample", "data.sample"]
    assert run.events("data.sample") == []


# -- attacks from a separate process with the agent's privileges (same user, a shell) -------------
def _agent(code: str, *args) -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


_APPEND = "import os, sys; p = sys.argv[1]; os.chmod(os.path.dirname(p), 0o755); os.chmod(p, 0o644); open(p, 'ab').write(b' ')"


@pytest.mark.heavy
def test_a_parent_checkpoint_edited_in_the_store_samples_nothing(trained_run):
    x, exp = trained_run
    _agent(_APPEND, x.run.store.path(exp.checkpoint) / "config.json")
    with pytest.raises(ToolRefused, match="modified on disk"):
        x.call(W1, "data.sample", {"family": "self_distill", "n": 4, "parent": exp.experiment_id})
    assert x.events("guard.blocked")[-1].payload["subcategory"] == "weight_provenance"
    assert x.events("data.sample") == []


def test_the_private_copy_written_through_while_sampling_is_refused(run, monkeypatch):
    import rsi_master.runtime._sample as sampler

    real = sampler.run_module

    def write_through(module, args, **kw):  # the agent found the harness's private copy before the child loads it
        request = json.loads(Path(args[0]).read_text())
        _agent(_APPEND, Path(request["checkpoint"]) / "config.json")
        return real(module, args, **kw)

    monkeypatch.setattr(sampler, "run_module", write_through)
    with pytest.raises(ToolRefused, match="changed while sampling"):
        run.call(W1, "data.sample", {"family": "self_distill", "params": {"prompts": 2}, "n": 4})
    assert run.events("guard.blocked")[-1].payload["subcategory"] == "weight_provenance"
    assert run.events("data.sample") == []
