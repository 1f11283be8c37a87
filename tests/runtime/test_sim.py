"""The simulated backend's runtime half: what a dataset amounts to as a recipe (family, knobs,
mixture, leaked protected items), stand-in checkpoints with real digests, evaluation records
whose samples give the simulator's count; no wall time is spent on a real clock."""

from __future__ import annotations

import time

from rsi_master.artifacts import dir_digest
from rsi_master.runtime import make_spec, read_sim_checkpoint, sim_evaluate, sim_recipe, sim_train, write_jsonl
from rsi_master.sim import PRESETS, generate_world
from rsi_master.tasks import SealKey, SimTask


def _task():
    land = generate_world(7)
    return land, SimTask(land, SealKey(secret=b"s" * 16))


def test_a_dataset_is_read_as_its_generators_recipe():
    _land, task = _task()
    fams = list(task.generators().values())
    a = fams[0].generate({}, 1, 30)
    b = fams[1].generate({}, 2, 10)
    item = task.eval_items("review")[0]
    rows = [*a, *b, {"prompt": item.prompt, "completion": "x\n"}]
    spec = make_spec(method="sft", learning_rate=1e-3, batch_size=8, max_steps=20)
    protected = {s: {i.prompt for i in task.eval_items(s)} for s in ("dev", "review", "final")}
    r = sim_recipe(rows, spec, protected, examples_per_row=10)
    assert r.family == fams[0].name and r.rows == 410 and r.steps == 20
    assert r.mixture == {fams[0].name: 0.75, fams[1].name: 0.25}
    assert r.leaked == {"review": 1}
    assert r.knobs == a[0]["check"]["sim"]["knobs"]


def test_train_and_evaluate_write_real_records_and_spend_no_real_time(tmp_path):
    land, task = _task()
    base = tmp_path / "base"
    from rsi_master.runtime import write_sim_checkpoint

    write_sim_checkpoint(land.base_checkpoint(), base, land)
    data = tmp_path / "d.jsonl"
    write_jsonl(data, next(iter(task.generators().values())).generate({}, 1, 40))
    spec = make_spec(method="sft", learning_rate=1e-3, batch_size=8, max_steps=500)
    t0 = time.time()
    res = sim_train(land, data, tmp_path / "out", spec, parent=base, protected={})
    assert time.time() - t0 < 5 and res.train_seconds > 60  # simulated seconds, not waited for
    assert res.checkpoint_digest == dir_digest(res.checkpoint_dir)
    assert res.parent_digest == dir_digest(base)
    ckpt, _ = read_sim_checkpoint(res.checkpoint_dir)
    rec = sim_evaluate(land, res.checkpoint_dir, task, "dev", n=50, evaluator_digest="e" * 64, store=None)
    assert [s.sample_id for s in rec.samples] == [i.sample_id for i in task.eval_items("dev")[:50]]
    assert sum(s.score for s in rec.samples) == land.evaluate(ckpt, "dev", 50)
    assert rec.checkpoint_digest == res.checkpoint_digest


def test_protected_items_come_from_the_seal_key_and_rows_never_equal_them():
    land = generate_world(7)
    one, two = SimTask(land, SealKey(secret=b"a" * 16)), SimTask(land, SealKey(secret=b"b" * 16))
    assert [i.prompt for i in one.eval_items("final")] != [i.prompt for i in two.eval_items("final")]
    assert len(one.eval_items("dev")) == land.split_sizes["dev"]
    prompts = {i.prompt for s in ("dev", "review", "final") for i in one.eval_items(s)}
    rows = [r for f in one.generators().values() for r in f.generate({}, 0, 200)]
    assert not prompts & {r["prompt"] for r in rows}


def test_a_simulated_tasks_learning_rate_range_stays_within_what_a_training_spec_takes():
    """A world's optima with half a decade of room can reach past the spec's bound (0.1);
    trials drawn there were refused as invalid. The range is cut at the bound, every optimum
    below it stays inside."""
    from rsi_master.tasks import MAX_LEARNING_RATE

    clipped = 0
    for seed in range(1_000_000, 1_000_012):
        land = generate_world(seed, PRESETS["default"])
        raw_lo, raw_hi = land.search_space()["learning_rate"]
        lo, hi = SimTask(land, SealKey(secret=b"s" * 16)).hints.learning_rate
        assert 0 < lo < hi <= MAX_LEARNING_RATE
        assert (lo, hi) == (raw_lo, raw_hi) if raw_hi <= MAX_LEARNING_RATE else hi == MAX_LEARNING_RATE
        clipped += raw_hi > MAX_LEARNING_RATE
    assert clipped, "no world of these seeds reaches past the bound: the test checks nothing"
