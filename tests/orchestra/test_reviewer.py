"""The programmatic Reviewer's report: typed findings (with the scores the records show) and
typed recommendations beside the prose lists, on recorded (fake) experiments whose review
records hold per-sample results (no training, no evaluation run)."""

from __future__ import annotations

import time

from rsi_master.events import Claim, Combine, Continue, Finding
from rsi_master.expos import Caller, load_state
from rsi_master.ledger import canonical_bytes
from rsi_master.orchestra import Conclusion, NodeContext, ReviewerBrief, load_graph
from rsi_master.orchestra._reports import OVERCLAIM_WEIGHT, best_review_score, claim_weights, recommendations
from rsi_master.orchestra._reviewer import EvidenceReviewer

from .helpers import MAIN, fake_experiment, finalize, new_run, record_eval


def _reviewed(expos, xid: str, right: list[bool]) -> None:
    """A `review` record of `xid` whose samples s0, s1, ... are right or wrong as given."""
    samples = [
        {"sample_id": f"s{i}", "output": "out", "score": 1.0 if ok else 0.0, "reason": "" if ok else "wrong"}
        for i, ok in enumerate(right)
    ]
    digest = expos.run.store.put_bytes(canonical_bytes({"samples": samples}))
    checkpoint = load_state(expos.reader).experiments[xid].checkpoint
    record_eval(
        expos,
        {"role": "reviewer", "id": "rx"},
        xid,
        "review",
        sum(right) / len(right),
        checkpoint=checkpoint,
        record_digest=digest,
        n_samples=len(right),
    )


def _review(
    expos,
    outcomes: dict[str, tuple[float, list[bool]]],
    claims: dict[str, list] | None = None,
    existing: dict[str, str] | None = None,
):
    """Workers w1, w2, ... each with one fake experiment (dev score, review outcomes), finalized,
    then reviewed by the EvidenceReviewer: (experiment ids, the review.submit payload, its
    typed recommendations). `existing` names a Worker's experiment recorded beforehand."""
    xids = {}
    for w, (dev, right) in outcomes.items():
        if w not in load_state(expos.reader).workers:
            expos.call(
                MAIN,
                "worker.add",
                {"worker_id": w, "task": "t", "predecessors": [], "direction": {"family": "answer_only"}},
            )
        xids[w] = (existing or {}).get(w) or fake_experiment(expos, w, dev)
        _reviewed(expos, xids[w], right)
    conclusions = {}
    for w, (dev, _) in outcomes.items():
        claimed = (claims or {}).get(w, [(xids[w], dev)])
        expos.call(
            Caller("worker", w),
            "worker.finalize",
            {
                "summary": "s",
                "claims": [{"experiment_id": x, "score": s} for x, s in claimed],
                "candidates": [xids[w]],
            },
        )
        conclusions[w] = Conclusion(
            expos.run.ledger.size() - 2, [Claim(experiment_id=x, score=s) for x, s in claimed], [xids[w]]
        )
    scope = list(outcomes)
    req = expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": scope})
    EvidenceReviewer().run(
        NodeContext(
            expos,
            Caller("reviewer", "r1"),
            ReviewerBrief("q", scope, req.seq, conclusions),
            time.time() + 60,
        )
    )
    (rev,) = expos.events("review.submit")
    return xids, rev.payload, recommendations(load_graph(expos.reader).reviewers["r1"])


def _items(n: int, right: range) -> list[bool]:
    return [i in right for i in range(n)]


def test_combine_and_continue_are_recommended_only_beyond_the_noise_with_their_tests(tmp_path):
    with new_run(tmp_path) as expos:
        # 40 review items: x1 solves 0..19, x2 solves 20..29, none of x1's (5 shared expected if
        # independent). Dev scores 0.5 and 0.3: the run's floor is 0.3.
        xids, rev, recs = _review(expos, {"w1": (0.5, _items(40, range(20))), "w2": (0.3, _items(40, range(20, 30)))})
        x1, x2 = xids["w1"], xids["w2"]
        findings = [Finding.model_validate(f) for f in rev["findings"]]
        assert {(f.experiment_ids[0], f.score) for f in findings if f.kind == "score"} == {(x1, 0.5), (x2, 0.25)}
        dev = [f for f in findings if f.split == "dev"]
        assert {(f.experiment_ids[0], f.status, f.score) for f in dev} == {
            (x1, "supported", 0.5),
            (x2, "supported", 0.3),
        }
        assert all(f.evidence and f.kind == "claim" for f in dev)  # each rests on its eval record
        # Every prose line of the report is one finding's claim: the two say the same.
        prose = [s for k in ("supported", "uncertainties", "violations", "regressions") for s in rev[k]]
        assert sorted(prose) == sorted(f.claim for f in findings)

        (combine,) = [r for r in recs if isinstance(r, Combine)]
        assert combine.worker_ids == ["w1", "w2"] and combine.experiment_ids == [x1, x2]
        sig = combine.significance
        assert sig is not None and sig.test == "complementarity" and sig.n == 40
        assert sig.p < 0.01 and sig.effect == 5.0  # 20 x 10 / 40 shared expected, none observed
        (cmp,) = [f for f in findings if f.kind == "comparison"]
        assert cmp.significance == sig
        # x1 gained 0.2 over the floor (p < 0.05): continued; x2 at 0.25 gained nothing: not.
        (cont,) = [r for r in recs if isinstance(r, Continue)]
        assert (cont.experiment_id, cont.worker_id) == (x1, "w1")
        assert cont.significance is not None and cont.significance.p < 0.05 and cont.significance.reference == "base"
        gains = {f.experiment_ids[0]: f for f in findings if f.kind == "gain"}
        assert gains[x2].status == "uncertain" and gains[x2].significance.p > 0.5
        assert not any(f.kind == "nothing" for f in findings)
        assert best_review_score(load_graph(expos.reader)) == 0.5


def test_a_review_of_independent_outcomes_recommends_nothing_and_says_so(tmp_path):
    from rsi_master.expos import Unguarded

    # Unguarded: no integrity audit, whose flags on fake experiments would be findings of their own.
    with new_run(tmp_path, guards=Unguarded()) as expos:
        # x2 shares exactly the 10 items independence predicts (20 x 20 / 40), and neither
        # scores above the floor (every dev score is 0.5): nothing beyond the noise.
        xids, rev, recs = _review(expos, {"w1": (0.5, _items(40, range(20))), "w2": (0.5, _items(40, range(10, 30)))})
        assert rev["violations"] == []
        assert recs == [] and rev["verdict"] == "pass"
        findings = [Finding.model_validate(f) for f in rev["findings"]]
        (nothing,) = [f for f in findings if f.kind == "nothing"]
        assert nothing.status == "supported" and set(nothing.experiment_ids) == set(xids.values())
        (cmp,) = [f for f in findings if f.kind == "comparison"]
        assert cmp.significance.p > 0.5


def test_a_claim_is_checked_against_a_fresh_measurement_and_a_non_candidate_claim_is_named(tmp_path):
    with new_run(tmp_path) as expos:
        # w1's dev record (and claim) is 1.0 on 5 dev items; review measures 0.25 on 40: an excess
        # far outside the noise, flagged with its size. w2's is inside the noise.
        _, rev, _ = _review(expos, {"w1": (1.0, _items(40, range(10))), "w2": (0.4, _items(40, range(5, 20)))})
        claims = {f.worker_ids[0]: f for f in map(Finding.model_validate, rev["findings"]) if f.kind == "claim"}
        assert claims["w1"].status == "unsupported" and claims["w1"].claim in rev["uncertainties"]
        sig = claims["w1"].significance
        assert sig.test == "claim" and abs(sig.effect - 0.75) < 1e-9 and sig.p < 0.01
        assert claims["w2"].status == "supported" and claims["w2"].significance.p > 0.01
        assert claims["w1"].claim not in rev["violations"]  # the record holds: weighed, not a violation
    from rsi_master.expos import Unguarded

    with new_run(tmp_path, name="other", guards=Unguarded()) as expos:  # no audit: the claim alone is found
        # w1 claims a checkpoint it does not put forward: a violation naming it, which weighs its
        # claims down but fails nothing (its candidate was measured afresh).
        expos.call(
            MAIN,
            "worker.add",
            {"worker_id": "w1", "task": "t", "predecessors": [], "direction": {"family": "answer_only"}},
        )
        other = fake_experiment(expos, "w1", 1.0)
        _, rev, _ = _review(
            expos,
            {"w1": (0.4, _items(40, range(16))), "w2": (0.4, _items(40, range(10, 26)))},
            claims={"w1": [(other, 1.0)]},
        )
        (v,) = [f for f in map(Finding.model_validate, rev["findings"]) if f.status == "unsupported"]
        assert v.kind == "claim" and v.experiment_ids == [other] and "does not put forward" in v.claim
        assert v.claim in rev["violations"] and rev["verdict"] == "pass"
        assert not any(f["kind"] == "nothing" for f in rev["findings"])
        assert claim_weights(load_graph(expos.reader)) == {"w1": OVERCLAIM_WEIGHT}


def test_the_display_reads_typed_scores_not_prose(tmp_path):
    with new_run(tmp_path) as expos:
        for w in ("w1", "w2"):
            expos.call(
                MAIN,
                "worker.add",
                {"worker_id": w, "task": "t", "predecessors": [], "direction": {"family": "answer_only"}},
            )
        x = fake_experiment(expos, "w1", 0.5)
        expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": ["w1", "w2"]})
        expos.call(
            Caller("reviewer", "r1"),
            "review.submit",
            {
                "scope": ["w1", "w2"],
                "verdict": "pass",
                "supported": [f"w1: {x} review 0.900"],
                "findings": [
                    {
                        "claim": f"w1: {x} review 0.400",
                        "status": "supported",
                        "split": "review",
                        "score": 0.4,
                        "experiment_ids": [x],
                    },
                    {"claim": "a dev score", "status": "supported", "split": "dev", "score": 0.8},
                    {
                        "claim": "a review score that does not hold",
                        "status": "unsupported",
                        "split": "review",
                        "score": 0.7,
                    },
                ],
            },
        )
        assert best_review_score(load_graph(expos.reader)) == 0.4


def test_a_review_naming_an_experiment_or_worker_that_does_not_exist_is_refused(tmp_path):
    import pytest

    from rsi_master.expos import ToolRefused

    with new_run(tmp_path) as expos:
        expos.call(
            MAIN,
            "worker.add",
            {"worker_id": "w1", "task": "t", "predecessors": [], "direction": {"family": "answer_only"}},
        )
        expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": ["w1"]})
        x = fake_experiment(expos, "w1", 0.5)
        for rec in (
            {"action": "continue", "experiment_id": "exp-99999", "worker_id": "w1", "reason": "r"},
            {"action": "combine", "worker_ids": ["w1", "w7"], "reason": "r"},
        ):
            with pytest.raises(ToolRefused, match=r"do not exist: \['(exp-99999|w7)'\]"):
                expos.call(
                    Caller("reviewer", "r1"),
                    "review.submit",
                    {"scope": ["w1"], "verdict": "pass", "recommendations": [rec]},
                )
        assert expos.events("review.submit") == []
        expos.call(
            Caller("reviewer", "r1"),
            "review.submit",
            {
                "scope": ["w1"],
                "verdict": "pass",
                "recommendations": [{"action": "continue", "experiment_id": x, "worker_id": "w1", "reason": "r"}],
            },
        )
        assert len(expos.events("review.submit")) == 1


def test_a_candidate_with_foreign_weights_is_a_violation_not_a_failed_review(tmp_path):
    # An unguarded workspace can adopt weights trained elsewhere: their experiment's parent is
    # `foreign`, no experiment of the run. The Reviewer reports it (and must not name `foreign`
    # as an experiment: review.submit refuses ids that do not exist, and the review would fail).
    with new_run(tmp_path) as expos:
        for w in ("w1", "w2"):
            expos.call(
                MAIN,
                "worker.add",
                {"worker_id": w, "task": "t", "predecessors": [], "direction": {"family": "answer_only"}},
            )
        x1, x2 = fake_experiment(expos, "w1", 0.5, parent="foreign"), fake_experiment(expos, "w2", 0.3)
        _reviewed(expos, x1, [True, True, False, False])
        _reviewed(expos, x2, [False, False, True, False])
        s1, s2 = finalize(expos, "w1", x1, 0.5), finalize(expos, "w2", x2, 0.3)
        req = expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": ["w1", "w2"]})
        conclusions = {
            w: Conclusion(s, [Claim(experiment_id=x, score=dev)], [x])
            for w, s, x, dev in (("w1", s1, x1, 0.5), ("w2", s2, x2, 0.3))
        }
        EvidenceReviewer().run(
            NodeContext(
                expos,
                Caller("reviewer", "r1"),
                ReviewerBrief("q", ["w1", "w2"], req.seq, conclusions),
                time.time() + 60,
            )
        )
        (rev,) = expos.events("review.submit")
        (violation,) = [v for v in rev.payload["violations"] if "foreign" in v]
        assert f"{x1}: its parent foreign cannot be inspected" in violation
        findings = [Finding.model_validate(f) for f in rev.payload["findings"]]
        assert all("foreign" not in f.experiment_ids for f in findings)


def test_a_continuation_is_measured_against_the_checkpoint_its_worker_started_from(tmp_path):
    from rsi_master.expos import Unguarded

    with new_run(tmp_path, guards=Unguarded()) as expos:
        for w in ("w1", "w2"):
            expos.call(
                MAIN,
                "worker.add",
                {"worker_id": w, "task": "t", "predecessors": [], "direction": {"family": "answer_only"}},
            )
        start = fake_experiment(expos, "w1", 0.5)  # w1's verified checkpoint, which w2 continued
        _reviewed(expos, start, _items(40, range(20)))
        # w2 trained twice from it; its candidate solves 12 more items and loses none, its
        # intermediate step solved 2 more: the Worker's whole step is what is measured.
        mid = fake_experiment(expos, "w2", 0.55, parent=start)
        top = fake_experiment(expos, "w2", 0.8, parent=mid)
        _reviewed(expos, mid, _items(40, range(22)))
        _, rev, recs = _review(expos, {"w2": (0.8, _items(40, range(32)))}, claims=None, existing={"w2": top})
        (gain,) = [Finding.model_validate(f) for f in rev["findings"] if f["kind"] == "gain"]
        assert gain.significance.reference == start and gain.significance.effect == 12 / 40
        assert gain.significance.p < 0.001 and gain.status == "supported"
        assert [(r.experiment_id, r.significance.reference) for r in recs if isinstance(r, Continue)] == [(top, start)]


def test_combine_conditions_on_item_difficulty_from_other_checkpoints(tmp_path):
    from rsi_master.expos import Unguarded

    with new_run(tmp_path, guards=Unguarded()) as expos:
        # Four earlier checkpoints (of a Worker outside the review) solve items 0..29 and none of
        # 30..49: those 20 are hard. x1 solves 0..19, x2 10..29: overall they share 10 items where
        # independence predicts 8 (no complementarity), but on the 30 items anyone solves they
        # share 10 where 13.3 are expected: B's 10 items beyond A's are complementary.
        expos.call(
            MAIN,
            "worker.add",
            {"worker_id": "w0", "task": "t", "predecessors": [], "direction": {"family": "answer_only"}},
        )
        for _ in range(4):
            _reviewed(expos, fake_experiment(expos, "w0", 0.6), _items(50, range(30)))
        xids, rev, recs = _review(expos, {"w1": (0.4, _items(50, range(20))), "w2": (0.4, _items(50, range(10, 30)))})
        (combine,) = [r for r in recs if isinstance(r, Combine)]
        assert combine.experiment_ids == [xids["w1"], xids["w2"]] or combine.experiment_ids == [xids["w2"], xids["w1"]]
        sig = combine.significance
        assert sig is not None and sig.n == 50 and sig.p < 0.02 and abs(sig.effect - (400 / 30 - 10)) < 1e-9
        (cmp,) = [Finding.model_validate(f) for f in rev["findings"] if f["kind"] == "comparison"]
        assert "conditional on item difficulty" in cmp.claim
