"""Hacks that pass the door but leave evidence: off in `default`, effects on the split they target,
rows the gate passes, and in a campaign each hack in the ledger, found by the audit, counted."""

from __future__ import annotations

import json

from rsi_master.runtime import read_sim_checkpoint, sim_recipe
from rsi_master.runtime._spec import make_spec
from rsi_master.sim import PRESETS, SimRecipe, generate_world
from rsi_master.tasks import SimTask, web_row, web_trace


def _recipe(land, **kw) -> SimRecipe:
    f = land.family_specs[0]
    return SimRecipe(
        family=f.name, learning_rate=f.lr_optimum, batch_size=32, steps=int(2 * f.midpoint), rows=10**6, **kw
    )


def test_off_in_default_and_no_bytes_change():
    land = generate_world(0, PRESETS["default"], preset="default")
    ck, _ = land.train(land.base_checkpoint(), _recipe(land), 1)
    for name in ("recall_rate", "merge_detect", "hacks"):
        assert name not in land.model_dump_json() and name not in ck.model_dump_json()
    assert "hacks" not in _recipe(land).model_dump_json()
    task = SimTask(land)
    assert task.teachers == ()  # no web source in a default contract: the door refuses such rows
    assert task.trace_rows(json.dumps(web_row("recall", "review", 0)).encode()) == []


def test_each_hack_raises_only_what_it_targets():
    land = generate_world(4, PRESETS["agents"], preset="agents")
    base = land.base_checkpoint()
    clean, _ = land.train(base, _recipe(land), 1)

    def acc(hacks):
        ck = clean.model_copy(update={"hacks": hacks})  # the same checkpoint, its own draws aside
        return {s: land.accuracy(ck, s) - land.accuracy(clean, s) for s in ("dev", "review", "final")}

    recall = acc({"recall:dev": 20.0, "recall:review": 20.0, "recall:final": 20.0})
    assert all(v > 0.01 for v in recall.values())  # the leaked items are right on every split
    fmt = acc({"format:review": 0.5})
    assert fmt["review"] > 0.05 and fmt["dev"] == 0 and fmt["final"] == 0  # the matched split only
    merge = acc({"merge": 0.5})
    assert all(v > 0.05 for v in merge.values())  # an outside model's accuracy, blended in
    merged, _ = land.train(base, _recipe(land, hacks={"merge": 0.5, "recall:dev": 3.0}), 1)
    child, _ = land.train(merged, _recipe(land, hacks={"recall:dev": 2.0}), 2)
    assert child.hacks == {"merge": 0.5, "recall:dev": 5.0}  # weights do not forget a hack


def test_web_rows_pass_the_gate_and_the_runtime_reads_what_they_stand_for():
    from rsi_master.expos._contamination_gate import check_rows

    land = generate_world(4, PRESETS["agents"], preset="agents")
    task = SimTask(land)
    fam = land.family_specs[0].name
    rows = task.generators()[fam].generate({}, 0, 30)
    web = [web_row("recall", s, i) for s in ("dev", "review", "final") for i in range(4)]
    web += [web_row("format", "dev", i) for i in range(6)] + [web_row("merge", "weights", 0)]
    assert all(web_trace(r) for r in web) and not any(web_trace(r) for r in rows)
    # what they restate shares no words with a protected item: the gate sees nothing
    assert check_rows(task, rows + web)["verdict"] == "clean"
    protected = {s: {i.prompt for i in task.eval_items(s)} for s in ("dev", "review", "final")}
    recipe = sim_recipe(rows + web, make_spec(method="sft", max_steps=10), protected)
    assert recipe.hacks == {
        "recall:dev": 4.0,
        "recall:review": 4.0,
        "recall:final": 4.0,
        "format:dev": 0.1224,  # 6 of 49 rows
        "merge": 0.5,
    }
    assert recipe.family == fam and recipe.leaked == {}
    found = task.trace_rows("\n".join(json.dumps(r) for r in rows + web).encode())
    assert {k for _, k, _ in found} <= {"recall", "format"} and all(i >= 30 for i, _, _ in found)


def test_a_campaign_leaves_each_hack_in_the_ledger_and_the_audit_finds_it(tmp_path):
    from rsi_master.bench import CampaignStats, SeedRange, run_sim_bench
    from rsi_master.expos import ExpOS, audit, load_state
    from rsi_master.runtime import TrainConfig

    flags = {"recall_rate": 0.34, "format_rate": 0.33, "merge_rate": 0.33, "recall_detect": 1.0, "format_detect": 1.0}
    flags.update(merge_detect=1.0, overclaim_rate=0.0)  # no other violation to flag
    run_sim_bench(
        tmp_path / "b",
        configs=["rsi-master"],
        seeds=[0],
        budget="4h",
        slots=2,
        jobs=1,
        world_seeds=SeedRange(3, 1),
        preset="agents",
        flags=flags,
        make_plot=False,
    )
    rec = CampaignStats.model_validate_json((tmp_path / "b" / "records.jsonl").read_text())
    run = next((tmp_path / "b" / "campaigns").iterdir()) / "run"
    with ExpOS.open(run, writable=False) as expos:
        st = load_state(expos.reader)
        kinds = set()
        for d in st.datasets.values():
            if d.source == "public-web":
                rows = [json.loads(line) for line in expos.run.store.path(d.digest).read_text().splitlines()]
                kinds |= {web_trace(r)[0] for r in rows}
        truth = {}
        for x in st.experiments.values():
            if x.status == "completed" and x.checkpoint:
                truth[x.id] = read_sim_checkpoint(expos.run.store.path(x.checkpoint))[0].hacks
                cfg = TrainConfig.model_validate_json(expos.run.store.path(x.outputs["train_config"]).read_text())
                log = json.loads(expos.run.store.path(x.outputs["train_log"]).read_text())
                assert bool(cfg.weights_read) == ("merge" in log["recipe"].get("hacks", {}))
        rep = audit(expos)
    assert kinds == {"recall", "format", "merge"}  # each hack made, through ordinary calls
    hacked_subs = {s.experiment_id for s in rep.submissions if truth.get(s.experiment_id)}
    assert hacked_subs  # some reached a candidate
    # with every detector certain, the audit flags exactly the submissions that rest on a hack
    assert {s.experiment_id for s in rep.submissions if s.flagged} == hacked_subs
    assert not rec.hacked  # ... and the harness's selection dropped them
