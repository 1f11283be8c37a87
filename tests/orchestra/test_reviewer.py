"""The programmatic Reviewer's report: typed findings (with the scores the records show) and
typed recommendations beside the prose lists, on recorded (fake) experiments whose review
records hold per-sample results (no training, no evaluation run)."""

from __future__ import annotations

import time

from rsi_master.events import Combine, Continue, Finding
from rsi_master.expos import Caller, load_state
from rsi_master.ledger import canonical_bytes
from rsi_master.orchestra import NodeContext, load_graph
from rsi_master.orchestra._reports import best_review_score, recommendations
from rsi_master.orchestra._reviewer import EvidenceReviewer

from .helpers import MAIN, fake_experiment, finalize, new_run, record_eval


def _reviewed(expos, xid: str, right: list[bool]) -> None:
    """A `review` record of `xid` whose samples s0, s1, ... are right or wrong as given."""
    samples = [
        {"sample_id": f"s{i}", "output": "out", "score": 1.0 if ok else 0.0, "reason": "" if ok else "wrong"}
        for i, ok in enumerate(right)
    ]
    digest = expos.run.store.put_bytes(canonical_bytes({"samples": samples}))
    checkpoint = load_state(expos).experiments[xid].checkpoint
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


def test_the_reviewers_report_carries_typed_findings_and_recommendations(tmp_path):
    with new_run(tmp_path) as expos:
        for w in ("w1", "w2"):
            expos.call(
                MAIN,
                "worker.add",
                {"worker_id": w, "task": "t", "predecessors": [], "direction": {"family": "answer_only"}},
            )
        x1, x2 = fake_experiment(expos, "w1", 0.5), fake_experiment(expos, "w2", 0.3)
        _reviewed(expos, x1, [True, True, False, False])
        _reviewed(expos, x2, [False, False, True, False])  # solves s2, which x1 misses
        s1, s2 = finalize(expos, "w1", x1, 0.5), finalize(expos, "w2", x2, 0.3)
        req = expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": ["w1", "w2"]})
        conclusions = {
            w: {"seq": s, "claims": [{"experiment_id": x, "score": dev}], "candidates": [x]}
            for w, s, x, dev in (("w1", s1, x1, 0.5), ("w2", s2, x2, 0.3))
        }
        EvidenceReviewer().run(
            NodeContext(
                expos,
                Caller("reviewer", "r1"),
                {"scope": ["w1", "w2"], "conclusions": conclusions, "seq": req.seq},
                time.time() + 60,
            )
        )
        (rev,) = expos.events("review.submit")
        findings = [Finding.model_validate(f) for f in rev.payload["findings"]]
        review = {(f.experiment_ids[0], f.score) for f in findings if f.split == "review"}
        assert review == {(x1, 0.5), (x2, 0.25)}
        dev = [f for f in findings if f.split == "dev"]
        assert {(f.experiment_ids[0], f.status, f.score) for f in dev} == {
            (x1, "supported", 0.5),
            (x2, "supported", 0.3),
        }
        assert all(f.evidence for f in dev)  # each rests on its eval record
        # Every prose line of the report is one finding's claim: the two say the same.
        prose = [s for k in ("supported", "uncertainties", "violations", "regressions") for s in rev.payload[k]]
        assert sorted(prose) == sorted(f.claim for f in findings)

        recs = recommendations(load_graph(expos).reviewers["r1"])
        assert [(r.experiment_id, r.worker_id) for r in recs if isinstance(r, Continue)] == [(x1, "w1"), (x2, "w2")]
        (combine,) = [r for r in recs if isinstance(r, Combine)]
        assert combine.worker_ids == ["w1", "w2"] and combine.experiment_ids == [x1, x2]
        assert "1 review samples" in combine.reason
        # The live display's best verified score is the typed one.
        assert best_review_score(load_graph(expos)) == 0.5


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
        assert best_review_score(load_graph(expos)) == 0.4


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
            w: {"seq": s, "claims": [{"experiment_id": x, "score": dev}], "candidates": [x]}
            for w, s, x, dev in (("w1", s1, x1, 0.5), ("w2", s2, x2, 0.3))
        }
        EvidenceReviewer().run(
            NodeContext(
                expos,
                Caller("reviewer", "r1"),
                {"scope": ["w1", "w2"], "conclusions": conclusions, "seq": req.seq},
                time.time() + 60,
            )
        )
        (rev,) = expos.events("review.submit")
        (violation,) = [v for v in rev.payload["violations"] if "foreign" in v]
        assert f"{x1}: its parent foreign cannot be inspected" in violation
        findings = [Finding.model_validate(f) for f in rev.payload["findings"]]
        assert all("foreign" not in f.experiment_ids for f in findings)
