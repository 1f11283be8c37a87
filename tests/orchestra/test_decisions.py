"""The Main policy at orchestration events, on ledgers with recorded (fake) experiments."""

from __future__ import annotations

import pytest

from rsi_master.expos import Caller
from rsi_master.orchestra import BudgetRule, Direction, MainContext, PolicyMain, load_graph

from .helpers import MAIN, fake_experiment, finalize, new_run


def _ctx(expos, spent: float, budget: float = 100.0, slots: int = 2) -> MainContext:
    return MainContext(expos, MAIN, budget, lambda: spent, slots)


def _recipe(xid, family, dev):
    return {
        "experiment_id": xid,
        "family": family,
        "method": "sft",
        "params": {"n_facts": 4},
        "mix": [],
        "config": {"learning_rate": 1e-3, "batch_size": 8, "max_steps": 20},
        "parent": "base",
        "dev_score": dev,
    }


def _decisions(expos):
    return load_graph(expos.reader).decisions


def test_start_opens_one_direction_per_slot_and_records_a_branch(tmp_path):
    with new_run(tmp_path) as expos:
        main = PolicyMain()
        main.start(_ctx(expos, 0.0), load_graph(expos.reader))
        g = load_graph(expos.reader)
        assert len(g.workers) == 2
        assert len({w.direction.key() for w in g.workers.values()}) == 2
        assert [d.action for d in g.decisions] == ["branch"]
        assert g.decisions[0].evidence == [0]  # rests on the contract
        main.start(_ctx(expos, 0.0), load_graph(expos.reader))  # idempotent: a resumed run does not re-seed
        assert len(load_graph(expos.reader).workers) == 2


def test_a_full_cycle_verify_revise_branch_and_stop(tmp_path):
    with new_run(tmp_path) as expos:
        main = PolicyMain()
        main.start(_ctx(expos, 0.0), load_graph(expos.reader))
        g = load_graph(expos.reader)
        w1, w2 = sorted(g.workers)
        fam1, fam2 = g.workers[w1].direction.family, g.workers[w2].direction.family
        x1 = fake_experiment(expos, w1, 0.5, review=0.4)
        s1 = finalize(expos, w1, x1, 0.5, _recipe(x1, fam1, 0.5))
        main.on_event(_ctx(expos, 10.0), load_graph(expos.reader), (s1, "finalize", w1))
        d = _decisions(expos)[-1]
        # One Worker alone is not reviewed across Workers: its slot gets the next direction.
        assert d.action == "branch" and d.answers == s1 and "event" not in d.detail and s1 in d.evidence
        assert len(load_graph(expos.reader).workers) == 3

        x2 = fake_experiment(expos, w2, 0.3, review=0.35)
        s2 = finalize(expos, w2, x2, 0.3, _recipe(x2, fam2, 0.3))
        main.on_event(_ctx(expos, 20.0), load_graph(expos.reader), (s2, "finalize", w2))
        d = _decisions(expos)[-1]
        assert d.action == "verify" and sorted(d.detail["scope"]) == [w1, w2]
        rid = d.detail["reviewer"]
        assert load_graph(expos.reader).reviewers[rid].cross_worker

        rev = expos.call(
            Caller("reviewer", rid),
            "review.submit",
            {
                "scope": [w1, w2],
                "verdict": "pass",
                "supported": [f"{w1}: {x1} review 0.400"],
                "recommendations": [
                    {
                        "action": "continue",
                        "experiment_id": x1,
                        "worker_id": w1,
                        "reason": "30/50 review samples still wrong; train it further",
                    },
                    {
                        "action": "combine",
                        "worker_ids": [w1, w2],
                        "experiment_ids": [x1, x2],
                        "reason": f"{x2} solves 3 review samples that {x1} misses",
                    },
                ],
                "evidence": [s1, s2],
            },
        ).seq
        main.on_event(_ctx(expos, 40.0), load_graph(expos.reader), (rev, "review", rid))
        d = _decisions(expos)[-1]
        # Without a prior the critique is weighed against the other options on the run's own
        # curves, and the decision says by how much: with one point per lineage, mixing w2's
        # family into x1's lineage promises more than training x1 further on its own data.
        assert d.action == "branch" and d.detail["combines"] == [w1, w2]
        assert "expected gain over 0.400" in d.rationale and "critique of" in d.rationale
        comb = load_graph(expos.reader).workers[d.detail["worker"]]
        assert comb.predecessors == [w1, w2] and comb.direction.mix[0]["family"] == fam2
        assert comb.direction.parent == x1
        assert main.plans.combine(_ctx(expos, 40.0), load_graph(expos.reader)) is None  # answered once
        # The critique is answered by continuing the verified checkpoint with its recipe.
        action, _, evidence, detail = main.plans.revise(_ctx(expos, 40.0), load_graph(expos.reader))
        assert action == "revise" and rev in evidence and detail["parent"] == x1
        g = load_graph(expos.reader)
        new = g.workers[detail["worker"]]
        assert new.predecessors == [w1] and new.direction.parent == x1
        assert new.direction.knobs["n_facts"].kind == "fixed"  # the verified recipe, fixed
        # Its first trial is the verified rate (1e-3), and TPE searches no lower than half of it.
        lr = new.direction.train["learning_rate"]
        assert new.direction.enqueue[0]["t:learning_rate"] == 1e-3 and (lr.low, lr.high) == (5e-4, 1e-3)
        # ... and as long as its allowance fits (the Worker cuts it to the time left), not the
        # verified trial's own 20 steps again: the lineage grows by the whole allowance.
        steps = new.direction.train["max_steps"]
        assert new.direction.enqueue[0]["t:max_steps"] == steps.high > 20
        # While that revise trains x1 further, "continue the leader" would only duplicate it
        # (two Workers, one parent, one recipe: the same weights, scored twice on dev): an idle
        # slot continues the next verified lineage instead.
        action, _, _, detail = main.plans.continue_lineage(_ctx(expos, 41.0), g)
        assert action == "continue" and detail["parent"] == x2
        g = load_graph(expos.reader)
        assert main.plans.continue_lineage(_ctx(expos, 42.0), g) is None  # both lineages are being trained
        seeds = [w.direction.seed for w in g.workers.values()]
        assert len(set(seeds)) == len(seeds)  # no two Workers draw the same data

        # Late in the budget: no new Worker, and the stop nominates the reviewed candidates.
        n_workers = len(load_graph(expos.reader).workers)
        assert not main.on_idle(_ctx(expos, 80.0), load_graph(expos.reader), 1)
        assert len(load_graph(expos.reader).workers) == n_workers
        main.finish(_ctx(expos, 100.0), load_graph(expos.reader), "budget spent")
        d = _decisions(expos)[-1]
        assert d.action == "stop" and d.detail["nominated"][0] == x1
        assert [e.payload["experiment_id"] for e in expos.events("candidate.nominate")][:2] == [x1, x2]


def test_failed_review_is_answered_by_a_revise_from_the_base(tmp_path):
    with new_run(tmp_path) as expos:
        main = PolicyMain()
        main.start(_ctx(expos, 0.0), load_graph(expos.reader))
        w1, w2 = sorted(load_graph(expos.reader).workers)
        expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": [w1, w2]})
        rev = expos.call(
            Caller("reviewer", "r1"),
            "review.submit",
            {"scope": [w1, w2], "verdict": "fail", "violations": [f"{w1} claims something unsupported"]},
        ).seq
        main.on_event(_ctx(expos, 30.0), load_graph(expos.reader), (rev, "review", "r1"))
        d = _decisions(expos)[-1]
        assert d.action == "revise" and d.detail["answers"] == rev
        assert load_graph(expos.reader).workers[d.detail["worker"]].direction.parent == "base"


def _reviewed(tmp_path, verdict, prose, recommendations):
    """Two Workers finalize one experiment each (x1 leads on review); a cross-Worker review with
    the given verdict, prose lists and typed recommendations covers both; the Main answers it."""
    expos = new_run(tmp_path, budget_s=1000.0)
    main = PolicyMain()
    main.start(_ctx(expos, 0.0, budget=1000.0), load_graph(expos.reader))
    g = load_graph(expos.reader)
    w1, w2 = sorted(g.workers)
    x1 = fake_experiment(expos, w1, 0.5, review=0.4)
    s1 = finalize(expos, w1, x1, 0.5, _recipe(x1, g.workers[w1].direction.family, 0.5))
    x2 = fake_experiment(expos, w2, 0.3, review=0.35)
    s2 = finalize(expos, w2, x2, 0.3, _recipe(x2, g.workers[w2].direction.family, 0.3))
    expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": [w1, w2]})
    rev = expos.call(
        Caller("reviewer", "r1"),
        "review.submit",
        {
            "scope": [w1, w2],
            "verdict": verdict,
            **prose,
            "evidence": [s1, s2],
            "recommendations": recommendations(w1, w2, x1, x2),
        },
    ).seq
    main.on_event(_ctx(expos, 40.0, budget=1000.0), load_graph(expos.reader), (rev, "review", "r1"))
    return expos, main, (w1, w2, x1, x2)


def test_the_main_reads_the_typed_recommendation_not_the_prose_a_stop_is_a_stop(tmp_path):
    # The prose says "continue x1" three ways; the one typed recommendation says stop it.
    def stop(w1, w2, x1, x2):
        return [
            {
                "action": "stop",
                "experiment_ids": [x1],
                "worker_ids": [],
                "reason": f"continue {x1} {w1}: no, its review samples are memorised",
            }
        ]

    prose = {"supported": ["continue exp-00001 w1: train it further"], "uncertainties": ["continue the leader"]}
    expos, main, (w1, _w2, x1, x2) = _reviewed(tmp_path, "pass", prose, stop)
    with expos:
        d = _decisions(expos)[-1]
        g = load_graph(expos.reader)
        assert d.action != "revise" and all(w.direction.parent != x1 for w in g.workers.values())
        # ... nor does an idle slot continue it, though it leads on review: x2 is trained instead.
        assert main.on_idle(_ctx(expos, 800.0, budget=1000.0), g, 1)
        d = _decisions(expos)[-1]
        assert d.action == "continue" and d.detail["parent"] == x2
        assert not main.on_idle(_ctx(expos, 800.0, budget=1000.0), load_graph(expos.reader), 1)

    # The same review with a typed Continue is answered by a revise that continues x1.
    def cont(w1, w2, x1, x2):
        return [{"action": "continue", "experiment_id": x1, "worker_id": w1, "reason": "train it further"}]

    expos, main, (w1, _w2, x1, x2) = _reviewed(tmp_path / "b", "pass", {}, cont)
    with expos:
        # (Without a prior the Main weighs when to answer it: `test_a_full_cycle...`.)
        action, rationale, _, detail = main.plans.revise(_ctx(expos, 40.0, budget=1000.0), load_graph(expos.reader))
        assert action == "revise" and detail["parent"] == x1
        assert f"continue {x1} {w1}: train it further" in rationale  # the typed message, rendered


def test_a_failed_review_redoes_the_worker_its_revise_names(tmp_path):
    def revise(w1, w2, x1, x2):
        return [{"action": "revise", "worker_id": w2, "experiment_ids": [x2], "reason": "its claim did not hold"}]

    expos, _, (w1, w2, _x1, _x2) = _reviewed(tmp_path, "fail", {"violations": ["something"]}, revise)
    with expos:
        d = _decisions(expos)[-1]
        g = load_graph(expos.reader)
        new = g.workers[d.detail["worker"]]
        assert d.action == "revise" and new.direction.parent == "base"
        assert new.direction.family == g.workers[w2].direction.family != g.workers[w1].direction.family


def test_a_direction_is_capped_at_its_share_before_a_passing_cross_worker_review(tmp_path):
    from rsi_master.orchestra._graph import ORCHESTRA

    with new_run(tmp_path, budget_s=100.0) as expos:
        main = PolicyMain(BudgetRule(share=0.4, worker_fraction=0.3))
        main.start(_ctx(expos, 0.0, slots=1), load_graph(expos.reader))
        (w1,) = load_graph(expos.reader).workers
        job = expos.record(ORCHESTRA, "orchestra.job.start", {"node": w1, "kind": "worker", "slot": 0})
        g = load_graph(expos.reader)
        expos.record(
            ORCHESTRA,
            "orchestra.job.end",
            {"start_seq": job.seq, "node": w1, "status": "done", "end_ts": g.jobs[0].start_ts + 30.0, "seconds": 30.0},
        )
        g = load_graph(expos.reader)
        d = g.workers[w1].direction
        assert main.plans.capped(_ctx(expos, 30.0), g, d)  # 30 s spent + a 30 s Worker > 40 s share
        assert not main.plans.capped(_ctx(expos, 30.0), g, d.model_copy(update={"family": "other"}))
        # A passing cross-Worker review lifts the cap.
        expos.call(MAIN, "worker.add", {"worker_id": "wx", "task": "t", "direction": {"family": "other"}})
        expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": [w1, "wx"]})
        expos.call(Caller("reviewer", "r1"), "review.submit", {"scope": [w1, "wx"], "verdict": "pass"})
        assert not main.plans.capped(_ctx(expos, 30.0), load_graph(expos.reader), d)


@pytest.fixture
def use_landscape(tmp_path_factory, monkeypatch):
    """Make a landscape file of these knowledge curves the one in force (`RSI_MASTER_LANDSCAPE`),
    and return its path: the Main plans with it only in a run that names it as its prior."""
    from rsi_master.landscape import ENV_VAR, Landscape, TaskLandscape, save

    def use(curves):
        path = tmp_path_factory.mktemp("landscape") / "landscape.json"
        save(Landscape(tasks={"knowledge": TaskLandscape(curves=curves)}), path)
        monkeypatch.setenv(ENV_VAR, str(path))
        return path

    return use


def test_expected_scores_interpolate_the_measured_curves_at_the_affordable_compute(use_landscape):
    from rsi_master.orchestra import expected_scores

    # One default experiment of either family costs 100 s (1,000 tokens at 0.1 s per token).
    early = {
        "points": [{"multiple": 1.0, "score": 0.2}, {"multiple": 4.0, "score": 0.2}],
        "tokens": 4000,
        "train_seconds": 400,
    }
    late = {
        "points": [{"multiple": 1.0, "score": 0.0}, {"multiple": 4.0, "score": 0.9}],
        "tokens": 4000,
        "train_seconds": 400,
    }
    use_landscape({"answer_only": early, "chain_then_answer": late})
    short = expected_scores("knowledge", 50.0)  # half a default experiment
    assert short["answer_only"] == 0.1 and short["chain_then_answer"] == 0.0
    long_ = expected_scores("knowledge", 300.0)  # three default experiments: 0.6 on the climbing curve
    assert abs(long_["chain_then_answer"] - 0.6) < 1e-9 and long_["answer_only"] == 0.2
    assert expected_scores("knowledge", 1e6)["chain_then_answer"] == 0.9  # past the horizon: last point
    assert expected_scores("arithmetic", 100.0) == {}  # no curves measured for the task


def test_the_opening_directions_follow_the_landscape_at_this_budget(tmp_path, use_landscape):
    early = {
        "points": [{"multiple": 1.0, "score": 0.2}, {"multiple": 4.0, "score": 0.2}],
        "tokens": 4000,
        "train_seconds": 400,
    }
    late = {
        "points": [{"multiple": 1.0, "score": 0.0}, {"multiple": 4.0, "score": 0.9}],
        "tokens": 4000,
        "train_seconds": 400,
    }
    prior = use_landscape({"answer_only": early, "chain_then_answer": late})
    opened = {}
    for budget in (100.0, 10_000.0):
        with new_run(tmp_path / str(int(budget)), prior=prior) as expos:
            PolicyMain().start(_ctx(expos, 0.0, budget=budget, slots=1), load_graph(expos.reader))
            opened[budget] = [w.direction.family for w in load_graph(expos.reader).workers.values()]
    # A short campaign opens what pays early; a long one what the curves put ahead later.
    assert opened == {100.0: ["answer_only"], 10_000.0: ["chain_then_answer"]}


def test_a_measured_data_selection_opens_a_short_campaign_as_a_direction_of_its_own(tmp_path, use_landscape):
    # `chain_then_answer[two_hop=0.0]` (one-hop questions only) learns early and stops;
    # the full family climbs past it: the selection opens a short campaign only.
    early = {
        "points": [{"multiple": 1.0, "score": 0.2}, {"multiple": 4.0, "score": 0.25}],
        "tokens": 4000,
        "train_seconds": 400,
    }
    late = {
        "points": [{"multiple": 1.0, "score": 0.0}, {"multiple": 4.0, "score": 0.9}],
        "tokens": 4000,
        "train_seconds": 400,
    }
    prior = use_landscape(
        {
            "chain_then_answer[two_hop=0.0]": early,
            "chain_then_answer": late,
            "chain_then_answer+lora": early,
            "answer_only[relations=9]": early,
        }
    )
    opened = {}
    for budget in (100.0, 10_000.0):
        with new_run(tmp_path / str(int(budget)), prior=prior) as expos:
            PolicyMain().start(_ctx(expos, 0.0, budget=budget, slots=2), load_graph(expos.reader))
            opened[budget] = [w.direction for w in load_graph(expos.reader).workers.values()]
    short, long_ = opened[100.0], opened[10_000.0]
    assert [d.key() for d in short] == ["chain_then_answer[two_hop=0.0]:sft", "chain_then_answer:sft"]
    assert short[0].knobs["two_hop"].kind == "fixed" and short[0].knobs["two_hop"].value == 0.0
    assert short[0].subset == "two_hop=0.0" and short[1].subset == ""
    # Its first trial is the rest of the evaluation distribution; the selected knob stays fixed.
    assert short[0].enqueue == [
        {"k:n_facts": 4, "k:relations": 4, "t:learning_rate": 1e-3, "t:batch_size": 2, "t:max_steps": 3000}
    ]
    assert next(d.key() for d in long_) == "chain_then_answer:sft"
    # Not directions: another training method, and a value outside the knob's range (relations <= 4).
    assert all("+" not in d.key() and "relations=9" not in d.key() for d in short + long_)


def _curve(*points):
    """A measured curve of (multiple, score) points; a default experiment costs 100 s on it."""
    return {"points": [{"multiple": m, "score": x} for m, x in points], "tokens": 4000, "train_seconds": 400}


def _typed(curves):
    from rsi_master.landscape import Curve

    return {label: Curve.model_validate(c) for label, c in curves.items()}


def _pts(*scores, multiples=(0.5, 1.0, 2.0, 3.0)):
    return {
        "points": [{"multiple": m, "score": x} for m, x in zip(multiples, scores)],
        "tokens": 4000,
        "train_seconds": 400,
    }


def test_a_direction_opens_at_the_batch_its_curves_put_ahead_early():
    from rsi_master.orchestra import opening_batch

    # Measured on program synthesis (three-run means): program-only is behind at batch 2,
    # trace-then-program turns sooner there.
    curves = {
        "prog": _pts(0.035, 0.057, 0.108, 0.15),
        "prog@b2": _pts(0.027, 0.05, 0.07, 0.067),
        "trace": _pts(0.017, 0.067, 0.228, 0.272),
        "trace@b2": _pts(0.025, 0.09, 0.205, 0.202),
        "late@b2": _pts(0.0, 0.0, 0.0, 0.9),
        "late": _pts(0.0, 0.0, 0.01, 0.2),
    }
    curves = _typed(curves)
    assert opening_batch("prog", curves) == 8
    assert opening_batch("trace", curves) == 2  # behind at 3x, but ahead where a campaign's lineages are
    assert opening_batch("late", curves) == 8  # what batch 2 reaches past 2x does not count
    assert opening_batch("other", curves) == 2  # no batch-2 curve: batch 2 (the probes' finding)
    assert opening_batch("prog", {"prog@b2": curves["prog@b2"]}) == 2  # nothing to compare it with


def test_a_data_selection_without_a_batch_2_curve_opens_at_its_familys_batch():
    from rsi_master.orchestra import opening_batch

    # Function calling: plan-then-call is behind at batch 2 (3.0% at 2x against 8.2%), and its
    # one-shown-function selection was measured at batch 8 only.
    curves = {
        "plan": _pts(0.0, 0.008, 0.082, 0.77),
        "plan@b2": _pts(0.0, 0.005, 0.03, 0.03),
        "plan[n_shown=1]": _pts(0.0, 0.012, 0.27, 0.34),
        "plan[max_arity=1]": _pts(0.0, 0.0, 0.0, 0.1),
        "plan[max_arity=1]@b2": _pts(0.0, 0.1, 0.2, 0.3),
    }
    curves = _typed(curves)
    assert opening_batch("plan[n_shown=1]", curves) == 8
    assert opening_batch("plan[max_arity=1]", curves) == 2  # its own batch-2 curve decides
    assert opening_batch("other[n_shown=1]", curves) == 2  # nothing measured of it or its family


def test_when_nothing_pays_on_a_share_the_direction_that_turns_soonest_opens(tmp_path, use_landscape):
    # A default experiment costs 100 s on both curves. A direction's share of a 1,000-s
    # one-slot campaign trains about 2 of them, where neither curve tells itself from zero
    # (answer_only 1.5%, chain_then_answer 0); the whole campaign trains 5, where
    # chain_then_answer has turned. It opens first, not the family that is 1.5 points up on noise.
    flat = _curve((1.0, 0.015), (4.0, 0.015))
    turns = _curve((1.0, 0.0), (2.0, 0.0), (4.0, 0.9))
    prior = use_landscape({"answer_only": flat, "chain_then_answer": turns})
    with new_run(tmp_path, prior=prior) as expos:
        PolicyMain().start(_ctx(expos, 0.0, budget=1000.0, slots=1), load_graph(expos.reader))
        opened = [w.direction.family for w in load_graph(expos.reader).workers.values()]
    assert opened == ["chain_then_answer"]


def test_the_opening_trial_and_order_use_the_batch_2_curve_where_one_was_measured(tmp_path, use_landscape):
    # answer_only stalls at batch 2 and opens at 8; chain_then_answer opens at 2, where its
    # curve (0.4 at this budget) is ahead of answer_only's batch-8 one (0.3), though its
    # batch-8 curve (0.2) is not: the order compares the curves of the batches they open at
    # (a 600-s campaign affords 2.7 default experiments here, within the batch-2 curves' 3x).
    prior = use_landscape(
        {
            "answer_only": _pts(0.2, 0.3, 0.3, 0.3),
            "answer_only@b2": _pts(0.0, 0.0, 0.01, 0.01),
            "chain_then_answer": _pts(0.0, 0.1, 0.2, 0.2),
            "chain_then_answer@b2": _pts(0.1, 0.25, 0.3, 0.4),
            "chain_then_answer[two_hop=0.0]": _pts(0.2, 0.2, 0.2, 0.2),
            "chain_then_answer[two_hop=0.0]@b2": _pts(0.0, 0.0, 0.0, 0.0),
        }
    )
    with new_run(tmp_path, prior=prior) as expos:
        PolicyMain().start(_ctx(expos, 0.0, budget=600.0, slots=3), load_graph(expos.reader))
        opened = [w.direction for w in load_graph(expos.reader).workers.values()]
    assert [d.label() for d in opened] == ["chain_then_answer", "answer_only", "chain_then_answer[two_hop=0.0]"]
    batch = {d.label(): d.enqueue[0]["t:batch_size"] for d in opened}
    assert batch == {"answer_only": 8, "chain_then_answer": 2, "chain_then_answer[two_hop=0.0]": 8}


def test_the_lineage_prior_reads_the_curve_of_the_batch_the_direction_trained_at(use_landscape):
    from rsi_master.orchestra._main_ranking import landscape_prior

    use_landscape(
        {
            "answer_only": _pts(0.0, 0.1, 0.2, 0.3),
            "answer_only@b2": _pts(0.0, 0.3, 0.5, 0.6),
            "chain_then_answer": _pts(0.0, 0.1, 0.2, 0.3),
        }
    )
    prior = landscape_prior("knowledge")
    at = {b: Direction(family="answer_only", enqueue=[{"t:batch_size": b}]) for b in (2, 8)}
    # one default experiment behind the lineage: the prior is each curve's point at 2x
    assert prior(at[2], 5000) == 0.5 and prior(at[8], 5000) == 0.2
    # no batch-2 curve measured: the batch-8 one, the closest measurement there is
    assert prior(Direction(family="chain_then_answer", enqueue=[{"t:batch_size": 2}]), 5000) == 0.2
    # past the batch-2 curve's horizon (3x), the batch-8 curve, which goes on (_pts ends at 3x too: 0.3)
    assert prior(at[2], 15000) == 0.3 and prior(at[2], 10000) == 0.6


def test_a_short_batch_2_curve_does_not_rank_a_long_campaign(use_landscape):
    from rsi_master.orchestra import expected_scores

    # batch-2 curve measured to 3x, batch-8 one to 8x: an hour-long campaign reads the latter
    long8 = {
        "points": [{"multiple": 3.0, "score": 0.2}, {"multiple": 8.0, "score": 0.5}],
        "tokens": 8000,
        "train_seconds": 800,
    }
    b2 = {**_pts(0.0, 0.1, 0.3, 0.3), "tokens": 3000, "train_seconds": 300}
    use_landscape(
        {
            "answer_only": long8,
            "answer_only@b2": b2,
            "chain_then_answer@b2": {**_pts(0.0, 0.1, 0.3, 0.4), "tokens": 3000},
        }
    )
    # one default experiment costs 100 s on every curve here
    assert expected_scores("knowledge", 200.0)["answer_only@b2"] == 0.3  # within its horizon
    far = expected_scores("knowledge", 800.0)
    assert "answer_only@b2" not in far and far["answer_only"] == 0.5
    assert far["chain_then_answer@b2"] == 0.4  # no batch-8 curve to read instead: its last point


def _two_verified(expos, main, first, second):
    """Start the Main on a 1000 s budget; each opened Worker finalizes one experiment
    (dev, review, steps) and one passing cross-Worker review covers both."""
    main.start(_ctx(expos, 0.0, budget=1000.0), load_graph(expos.reader))
    w1, w2 = sorted(load_graph(expos.reader).workers)
    g = load_graph(expos.reader)
    xs, seqs = [], []
    for w, (dev, review, steps) in ((w1, first), (w2, second)):
        x = fake_experiment(expos, w, dev, review=review, steps=steps)
        seqs.append(finalize(expos, w, x, dev, _recipe(x, g.workers[w].direction.family, dev)))
        xs.append(x)
    expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": [w1, w2]})
    expos.call(Caller("reviewer", "r1"), "review.submit", {"scope": [w1, w2], "verdict": "pass", "evidence": seqs})
    return w1, w2, xs[0], xs[1]


def test_late_an_idle_slot_continues_the_verified_leader_and_opens_nothing_new(tmp_path):
    with new_run(tmp_path, budget_s=1000.0) as expos:
        main = PolicyMain()
        w1, w2, x1, x2 = _two_verified(expos, main, (0.5, 0.4, 20), (0.3, 0.2, 20))
        n = len(load_graph(expos.reader).workers)
        # 80% spent (late), 200 s left: nothing to compare, so the idle slot trains the leader,
        # sized to end before the 50 s kept for the last comparison.
        assert main.on_idle(_ctx(expos, 800.0, budget=1000.0), load_graph(expos.reader), 1)
        d = _decisions(expos)[-1]
        g = load_graph(expos.reader)
        new = g.workers[d.detail["worker"]]
        assert d.action == "continue" and new.direction.parent == x1 and len(g.workers) == n + 1
        assert new.direction.seconds <= 150.0
        # Both lineages being trained or too little time left: nothing, and never a new direction.
        assert main.on_idle(_ctx(expos, 800.0, budget=1000.0), g, 1)  # x2 is free
        assert _decisions(expos)[-1].detail["parent"] == x2
        assert not main.on_idle(_ctx(expos, 800.0, budget=1000.0), load_graph(expos.reader), 1)
        assert not main.on_idle(_ctx(expos, 960.0, budget=1000.0), load_graph(expos.reader), 1)
        assert {w.direction.family for w in load_graph(expos.reader).workers.values()} == {
            g.workers[w1].direction.family,
            g.workers[w2].direction.family,
        }


def test_among_tied_verified_checkpoints_the_main_continues_the_more_trained_one(tmp_path):
    # A finding of the built-in suite (learning is late: a zero after 1,600 examples is closer
    # to its turn than one after 160), so a prior's: with the shipped one as the run's prior, as
    # when it was every run's. Without a prior, review ties still break this way (`_verified`),
    # and continuations go by expected gain (test_noprior.py).
    with new_run(tmp_path, budget_s=1000.0, prior="shipped") as expos:
        main = PolicyMain()
        # Both score 0 on review (the first minutes of a campaign); w2's checkpoint has 10x the training.
        _, _, x1, x2 = _two_verified(expos, main, (0.0, 0.0, 20), (0.0, 0.0, 200))
        assert [t[0] for t in main.ranker.verified(_ctx(expos, 800.0, budget=1000.0), load_graph(expos.reader))] == [
            x2,
            x1,
        ]
        assert main.on_idle(_ctx(expos, 800.0, budget=1000.0), load_graph(expos.reader), 1)
        assert _decisions(expos)[-1].detail["parent"] == x2


def test_tied_at_zero_the_main_continues_the_lineage_the_landscape_expects_more_of(tmp_path, use_landscape):
    # answer_only is flat at 2%; chain_then_answer is at 0 for half a default experiment and
    # then climbs. Both checkpoints score 0 on review; answer_only's has 10x the training.
    flat = _curve((0.5, 0.02), (4.0, 0.02))
    late = _curve((0.5, 0.0), (1.0, 0.15), (2.0, 0.3))
    prior = use_landscape({"answer_only": flat, "chain_then_answer": late})
    with new_run(tmp_path, budget_s=1000.0, prior=prior) as expos:
        main = PolicyMain()
        main.start(_ctx(expos, 0.0, budget=1000.0), load_graph(expos.reader))
        fams = {w.direction.family: w.id for w in load_graph(expos.reader).workers.values()}
        assert set(fams) == {"answer_only", "chain_then_answer"}
        steps = {fams["answer_only"]: 200, fams["chain_then_answer"]: 20}
        # _two_verified opens the same two Workers again (start is idempotent) and gives w1, w2 their steps.
        w1, w2 = sorted(fams.values())
        _, _, x1, x2 = _two_verified(expos, main, (0.0, 0.0, steps[w1]), (0.0, 0.0, steps[w2]))
        chain_x = x1 if w1 == fams["chain_then_answer"] else x2
        ranked = [t[0] for t in main.ranker.verified(_ctx(expos, 800.0, budget=1000.0), load_graph(expos.reader))]
        # 160 examples, but one more default experiment puts it at ~15% against answer-only's 2%
        assert ranked[0] == chain_x
        assert main.on_idle(_ctx(expos, 800.0, budget=1000.0), load_graph(expos.reader), 1)
        assert _decisions(expos)[-1].detail["parent"] == chain_x


def test_late_in_a_short_budget_no_direction_opens_with_an_allowance_below_its_own_shortest_trial(tmp_path):
    """A GRPO direction trains at batch 4 or 8 where the task's cheapest batch is 2: an allowance
    that holds the task's shortest trial may not hold the direction's. Such a Worker used to start,
    find its first trial did not fit and finalize in 4 s with `0 started` (a 90-s run on a task
    directory); now every Worker the Main opens gets time for its direction's shortest trial, and
    a direction whose shortest trial no longer fits is not opened."""
    from rsi_master.orchestra._job import run_timing
    from rsi_master.orchestra._main_budget import TRIAL_MARGIN
    from rsi_master.orchestra._trial_timing import cheapest_batch, min_trial_seconds
    from tests.tasks.dir.helpers import make_task_dir

    task = make_task_dir(tmp_path / "task", "numeric", n=4, train=8)
    for spent, grpo_opens in ((0.0, True), (40.0, False)):
        with new_run(tmp_path, str(task), budget_s=90.0, name=f"run-{spent:g}") as expos:
            main, ctx = PolicyMain(), _ctx(expos, spent, budget=90.0)
            while main.plans.branch(ctx, load_graph(expos.reader)) is not None:
                pass
            workers = load_graph(expos.reader).workers.values()
            assert workers
            for w in workers:
                floor = TRIAL_MARGIN * min_trial_seconds(run_timing(expos.reader), cheapest_batch(w.direction))
                assert w.direction.seconds >= floor, (w.direction.key(), w.direction.seconds, floor)
            assert any(w.direction.method == "grpo" for w in workers) == grpo_opens


def test_before_any_measurement_the_main_prices_trials_with_the_prior_the_budget_was_checked_with(tmp_path):
    """The bench's calibration (step, per-example and per-trial seconds) checks the budget; the
    Main's allowances must read the same figures, per example included, until the run measures."""
    from rsi_master.orchestra._job import run_timing
    from rsi_master.orchestra._trial_timing import min_trial_seconds

    prior = {"step_s": 0.5, "example_s": 0.11, "overhead_s": 9.0}
    with new_run(tmp_path, "arithmetic", budget_s=600.0, timing_prior=prior) as expos:
        assert run_timing(expos.reader) == prior
        for batch in (2, 8, 32):  # per example: a step of batch 32 is not priced like one of batch 2
            assert min_trial_seconds(run_timing(expos.reader), batch) == min_trial_seconds(prior, batch)
