"""The Main weighs a review's findings by their tests (`_reports`: carried, cleared, gains,
claim weights) and spends its late budget only on lineages that can still matter
(`_main_late`), on ledgers with recorded (fake) experiments and typed reviews."""

from __future__ import annotations

from typing import Any

from rsi_master.events import Significance
from rsi_master.expos import Caller
from rsi_master.orchestra import MainContext, PolicyMain, load_graph
from rsi_master.orchestra._evidence import Evidence
from rsi_master.orchestra._reports import OVERCLAIM_WEIGHT

from .helpers import MAIN, fake_experiment, finalize, new_run

BUDGET = 1000.0


def _ctx(expos, spent: float) -> MainContext:
    return MainContext(expos, MAIN, BUDGET, lambda: spent, 2)


def _sig(test: str, p: float, effect: float = 0.05) -> dict[str, Any]:
    return Significance(test=test, effect=effect, noise=0.03, p=p, n=100).model_dump(mode="json")


def _run(tmp_path, name: str, reviews: tuple[float, float], verdict: str = "pass", extra=lambda x1, x2: ([], [])):
    """Two opened Workers finalize one experiment each (dev 0.5 and 0.3, the given review scores
    on 100 items); a cross-Worker review with typed `score` findings plus `extra(x1, x2)`'s
    (findings, recommendations) covers both. Returns (expos, main, w1, w2, x1, x2)."""
    expos = new_run(tmp_path, budget_s=BUDGET, name=name, eval_limit=100)
    main = PolicyMain()
    main.start(_ctx(expos, 0.0), load_graph(expos.reader))
    g = load_graph(expos.reader)
    w1, w2 = sorted(g.workers)
    xs, seqs = [], []
    for w, dev, review in ((w1, 0.5, reviews[0]), (w2, 0.3, reviews[1])):
        x = fake_experiment(expos, w, dev, review=review)
        recipe = {"experiment_id": x, "family": g.workers[w].direction.family, "dev_score": dev}
        seqs.append(finalize(expos, w, x, dev, recipe))
        xs.append(x)
    x1, x2 = xs
    findings, recs = extra(x1, x2)
    scores = [
        {
            "claim": f"{x} review",
            "status": "supported",
            "kind": "score",
            "split": "review",
            "score": s,
            "experiment_ids": [x],
            "worker_ids": [w],
        }
        for w, x, s in ((w1, x1, reviews[0]), (w2, x2, reviews[1]))
    ]
    expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": [w1, w2]})
    expos.call(
        Caller("reviewer", "r1"),
        "review.submit",
        {
            "scope": [w1, w2],
            "verdict": verdict,
            "findings": [*scores, *findings],
            "recommendations": recs,
            "evidence": seqs,
        },
    )
    return expos, main, w1, w2, x1, x2


def _combine(p: float):
    def extra(x1, x2):
        return [], [
            {
                "action": "combine",
                "worker_ids": ["w1", "w2"],
                "experiment_ids": [x1, x2],
                "reason": "r",
                "significance": _sig("complementarity", p, effect=4.0),
            }
        ]

    return extra


def test_a_combination_is_acted_on_only_when_its_test_carries_it(tmp_path):
    for name, p, acted in (("noise", 0.3, False), ("real", 0.01, True)):
        expos, main, *_ = _run(tmp_path, name, (0.6, 0.5), extra=_combine(p))
        with expos:
            combos = list(main.plans.combinations(_ctx(expos, 100.0), load_graph(expos.reader)))
            # The review's recommendation only when its test carries it (a trial, review None,
            # is there either way: `test_two_verified_families_never_mixed_are_tried_together_once`).
            assert any(r is not None for r, *_ in combos) is acted, name


def test_two_verified_families_never_mixed_are_tried_together_once(tmp_path):
    expos, main, w1, w2, x1, _ = _run(tmp_path, "trial", (0.6, 0.5))
    with expos:
        ctx = _ctx(expos, 100.0)
        g = load_graph(expos.reader)
        trials = [c for c in main.plans.combinations(ctx, g) if c[0] is None]
        # The leader on review (w1) trained further from its checkpoint on a mix with the runner-up's family.
        assert [(a, b) for _, a, b, _, _ in trials] == [(w1, w2)]
        d = trials[0][4]
        assert d.parent == x1 and d.family == g.workers[w1].direction.family
        assert [m["family"] for m in d.mix] == [g.workers[w2].direction.family]
        plan = main.plans.combine(ctx, g)
        assert plan is not None and plan.detail["trial"] is True and plan.detail["combines"] == [w1, w2]
        assert "trial" in plan.rationale and "review" not in plan.detail
        # Tried once: a Worker already mixes these families, so no trial of them again.
        assert [c for c in main.plans.combinations(ctx, load_graph(expos.reader)) if c[0] is None] == []


def test_a_critique_whose_last_step_gained_nothing_measurable_is_not_answered(tmp_path):
    for name, p, answered in (("flat", 0.4, False), ("gained", 0.01, True)):

        def extra(x1, x2, p=p):
            rec = {"action": "continue", "experiment_id": x1, "worker_id": "w1", "reason": "r"}
            return [], [{**rec, "significance": _sig("gain", p)}]

        expos, main, _, _, x1, _ = _run(tmp_path, name, (0.6, 0.5), extra=extra)
        with expos:
            target = main.plans.critique_target(_ctx(expos, 100.0), load_graph(expos.reader))
            assert (target is not None and target[0] == x1) is answered, name


def test_late_a_slot_does_not_go_to_a_lineage_far_below_the_leader_when_the_leaders_is_taken(tmp_path):
    # Review on 100 items: the leader's 0.80 has a standard error of 0.04, so 0.40 is far
    # below it (more than 2 se) and 0.76 is not.
    for name, second, continued in (("far", 0.40, False), ("near", 0.76, True)):
        expos, main, _, _, x1, x2 = _run(tmp_path, name, (0.80, second))
        with expos:
            assert main.on_idle(_ctx(expos, 800.0), load_graph(expos.reader), 1)  # late: one slot trains on
            assert main.on_idle(_ctx(expos, 800.0), load_graph(expos.reader), 1) is continued, name
            parents = {w.direction.parent for w in load_graph(expos.reader).workers.values()} - {"base"}
            assert parents == ({x1, x2} if continued else {x1}), name


def test_late_a_lineage_whose_last_step_measured_no_gain_is_not_continued(tmp_path):
    def extra(x1, x2):
        gain = {"claim": "c", "status": "uncertain", "kind": "gain", "worker_ids": ["w1"]}
        # x1 gained nothing; x2's gain is inside the noise (p = 0.3) but a gain: it is continued.
        return [
            {**gain, "experiment_ids": [x1], "significance": _sig("gain", 0.6, effect=-0.01)},
            {**gain, "experiment_ids": [x2], "significance": _sig("gain", 0.3, effect=0.02)},
        ], []

    expos, main, _, _, x1, x2 = _run(tmp_path, "nogain", (0.80, 0.78), extra=extra)
    with expos:
        # The leader measured no gain: the idle slot trains x2 instead, then nothing.
        assert main.on_idle(_ctx(expos, 800.0), load_graph(expos.reader), 1)
        assert load_graph(expos.reader).decisions[-1].detail["parent"] == x2
        assert not main.on_idle(_ctx(expos, 800.0), load_graph(expos.reader), 1)
        assert all(w.direction.parent != x1 for w in load_graph(expos.reader).workers.values())


def test_a_review_failed_on_one_workers_claim_still_verifies_the_other(tmp_path):
    def extra(x1, x2):
        claim = {"claim": "w1 claims another", "status": "unsupported", "kind": "claim", "experiment_ids": [x1]}
        return [{**claim, "worker_ids": ["w1"]}], [{"action": "revise", "worker_id": "w1", "reason": "r"}]

    expos, main, _, _, _, x2 = _run(tmp_path, "fail", (0.80, 0.60), verdict="fail", extra=extra)
    with expos:
        assert [t[0] for t in main.ranker.verified(_ctx(expos, 100.0), load_graph(expos.reader))] == [x2]
    # A failed report with no typed score (schema v1/v2, or nothing measured) fails its whole scope.
    expos = new_run(tmp_path, budget_s=BUDGET, name="v2", eval_limit=100)
    main = PolicyMain()
    main.start(_ctx(expos, 0.0), load_graph(expos.reader))
    with expos:
        w1, w2 = sorted(load_graph(expos.reader).workers)
        x = fake_experiment(expos, w1, 0.5, review=0.8)
        finalize(expos, w1, x, 0.5)
        expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": [w1, w2]})
        expos.call(
            Caller("reviewer", "r1"), "review.submit", {"scope": [w1, w2], "verdict": "fail", "violations": ["v"]}
        )
        assert main.ranker.verified(_ctx(expos, 100.0), load_graph(expos.reader)) == []


def test_an_overclaiming_workers_points_weigh_less_in_the_learning_curves(tmp_path):
    def extra(x1, x2):
        claim = {"claim": "c", "status": "unsupported", "kind": "claim", "experiment_ids": [x1], "worker_ids": ["w1"]}
        return [{**claim, "significance": _sig("claim", 0.001, effect=0.3)}], []

    expos, _, w1, w2, *_ = _run(tmp_path, "over", (0.80, 0.60), extra=extra)
    with expos:
        g = load_graph(expos.reader)
        ev = Evidence(_ctx(expos, 100.0), g)
        assert ev.points[g.workers[w1].direction.key()][0][2] == OVERCLAIM_WEIGHT
        assert ev.points[g.workers[w2].direction.key()][0][2] == 1.0


def test_late_a_lineage_is_flat_only_when_its_forecast_gains_less_than_one_item():
    from rsi_master.orchestra._main_late import plateaued

    # 50-item scores: one item is 0.02, one standard error at 0.5 about 0.07. A leader forecast
    # +0.022 (+-0.017) is still a better checkpoint to train late, though inside the noise.
    assert not plateaued(0.52, 0.542, 0.017, 4, 50)
    assert plateaued(0.52, 0.52, 0.014 / 2, 4, 50)  # forecasts nothing: flat
    assert not plateaued(0.52, 0.52, 0.0, 2, 50)  # two points cannot tell flat from one noisy step


def test_an_unexplored_direction_is_priced_only_while_one_can_be_opened(tmp_path):
    expos, main, *_, x1, _ = _run(tmp_path, "opened", (0.80, 0.60))
    with expos:
        ctx = _ctx(expos, 100.0)
        _, note = main.plans.weighed(ctx, load_graph(expos.reader))
        assert "an unexplored direction" in note  # openings are left: branching is an option
        # Every remaining direction opened (running): `branch` has nothing to open, so the
        # forecast neither ranks an unexplored direction above continuing nor names one.
        for d in main.plans.openings(ctx, load_graph(expos.reader)):
            main.plans.add(ctx, load_graph(expos.reader), d, "open", [])
        g = load_graph(expos.reader)
        assert main.plans.branch(ctx, g) is None
        order, note = main.plans.weighed(ctx, g)
        names = [p.__name__ for p in order]
        assert names.index("continue_lineage") < names.index("branch")
        assert "unexplored direction" not in note and x1 in note
        assert main.on_idle(ctx, load_graph(expos.reader), 1)
        g = load_graph(expos.reader)
        last = g.decisions[-1]
        # The idle slot builds on the leader x1: further (continue) or, first, mixed with the
        # runner-up's family (the trial combination, priced at an unseen direction's spread).
        assert (last.action, last.detail.get("trial")) in (("continue", None), ("branch", True))
        assert g.workers[last.detail["worker"]].direction.parent == x1
        assert "unexplored direction" not in last.rationale
