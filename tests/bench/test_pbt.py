"""The PBT Main against recorded experiments (no training): population, truncation selection
(copy a top member's checkpoint through the lineage, perturb its recipe), continuation."""

from __future__ import annotations

import random

from rsi_master.bench._pbt import FACTORS, INTERVAL_STEPS, PBTMain, perturb
from rsi_master.expos import Caller
from rsi_master.orchestra import MainContext, Range, load_graph
from tests.orchestra.helpers import fake_experiment, finalize, new_run

MAIN = Caller("main", "main")


def _ctx(expos, slots=2):
    return MainContext(expos, MAIN, 300.0, lambda: 30.0, slots, 0, "x:Y")


def _finish(expos, wid, dev):
    xid = fake_experiment(expos, wid, dev)
    return xid, finalize(expos, wid, xid, dev)


def test_population_starts_with_fixed_one_interval_directions(tmp_path):
    with new_run(tmp_path) as expos:
        PBTMain().start(_ctx(expos, slots=2), load_graph(expos.reader))
        ws = load_graph(expos.reader).workers
        assert sorted(ws) == ["p0-g1", "p1-g1", "p2-g1", "p3-g1"]
        for w in ws.values():
            d = w.direction
            assert d.agent == "x:Y" and d.parent == "base" and d.trials == 1
            assert all(r.kind == "fixed" for r in [*d.knobs.values(), *d.train.values()])
            assert d.train["max_steps"].value == INTERVAL_STEPS
        assert len({w.direction.train["learning_rate"].value for w in ws.values()}) == 4  # random recipes


def test_bottom_member_copies_a_top_checkpoint_and_perturbs_its_recipe(tmp_path):
    with new_run(tmp_path) as expos:
        m, ctx = PBTMain(), _ctx(expos, slots=2)
        m.start(ctx, load_graph(expos.reader))
        scores = {"p0-g1": 0.1, "p1-g1": 0.5, "p2-g1": 0.3, "p3-g1": 0.2}
        xids, seqs = {}, {}
        for wid, dev in scores.items():
            xids[wid], seqs[wid] = _finish(expos, wid, dev)
        m.on_event(ctx, load_graph(expos.reader), (seqs["p0-g1"], "finalize", "p0-g1"))
        m.on_event(ctx, load_graph(expos.reader), (seqs["p1-g1"], "finalize", "p1-g1"))
        m.on_event(ctx, load_graph(expos.reader), (seqs["p2-g1"], "finalize", "p2-g1"))
        g = load_graph(expos.reader)
        top, low, mid = g.workers["p1-g2"], g.workers["p0-g2"], g.workers["p2-g2"]
        # exploit: the worst member trains on from the best member's checkpoint, in its lineage
        assert low.direction.parent == xids["p1-g1"] and low.predecessors == ["p1-g1"]
        assert expos.projection().state.predecessors("p0-g2") >= {"p1-g1"}
        src = g.workers["p1-g1"].direction
        assert low.direction.family == src.family
        lr0, lr1 = src.train["learning_rate"].value, low.direction.train["learning_rate"].value
        r = Range(kind="float", low=5e-4, high=3e-3, log=True)
        assert any(abs(lr1 - min(max(lr0 * f, r.low), r.high)) < 1e-12 for f in FACTORS) or r.low <= lr1 <= r.high
        # the others continue from their own checkpoints with their own recipes
        assert top.direction.parent == xids["p1-g1"] and top.predecessors == ["p1-g1"]
        assert mid.direction.parent == xids["p2-g1"]
        assert mid.direction.train["learning_rate"] == g.workers["p2-g1"].direction.train["learning_rate"]
        # every event is answered by a recorded decision
        assert not expos.projection().state.unanswered.keys() & {seqs[w] for w in ("p0-g1", "p1-g1", "p2-g1")}


def test_perturb_multiplies_by_the_pbt_factors_or_resamples_within_range():
    r = Range(kind="float", low=1e-4, high=1e-2, log=True)
    rng = random.Random(0)
    vals = [perturb(1e-3, r, rng) for _ in range(400)]
    factors = [v / 1e-3 for v in vals]
    near = sum(any(abs(f - x) < 1e-9 for x in FACTORS) for f in factors)
    assert 0.6 * 400 < near < 0.9 * 400  # about 1 - RESAMPLE perturbed, the rest resampled
    assert all(r.low <= v <= r.high for v in vals)
    c = Range(kind="choice", choices=[2, 4, 8])
    kept = [perturb(4, c, rng) for _ in range(400)]
    assert set(kept) <= {2, 4, 8} and kept.count(4) > 250
    assert perturb(7, Range(kind="fixed", value=3), rng) == 3


def test_a_tie_is_no_reason_to_copy(tmp_path):
    with new_run(tmp_path) as expos:
        m, ctx = PBTMain(), _ctx(expos, slots=2)
        m.start(ctx, load_graph(expos.reader))
        seqs = {wid: _finish(expos, wid, 0.0)[1] for wid in ("p0-g1", "p1-g1", "p2-g1", "p3-g1")}
        for wid in ("p3-g1", "p0-g1"):
            m.on_event(ctx, load_graph(expos.reader), (seqs[wid], "finalize", wid))
        g = load_graph(expos.reader)
        assert g.workers["p3-g2"].predecessors == ["p3-g1"] and g.workers["p0-g2"].predecessors == ["p0-g1"]
