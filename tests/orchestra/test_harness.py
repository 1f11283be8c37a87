"""The harness's selection rule on recorded (fake) experiments.

Fake experiments have no real dataset, so the integrity audit would flag them all; these
tests pin the ranking among accepted submissions with an audit that flags nothing (the
audit's own tests are in tests/expos)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rsi_master.orchestra import MainContext, PolicyMain, load_graph
from rsi_master.orchestra._harness import select

from .helpers import MAIN, fake_experiment, finalize, new_run


@pytest.fixture(autouse=True)
def clean_audit(monkeypatch):
    import rsi_master.expos

    monkeypatch.setattr(rsi_master.expos, "audit",
                        lambda expos: SimpleNamespace(flagged=[], hacking_rate=0.0, blocked_attempts=0))


def _two_submissions(expos, first, second):
    """Two opened Workers, each submitting one experiment (review score, steps)."""
    PolicyMain().start(MainContext(expos, MAIN, 1000.0, lambda: 0.0, 2), load_graph(expos))
    xs = []
    for w, (review, steps) in zip(sorted(load_graph(expos).workers), (first, second)):
        xs.append(fake_experiment(expos, w, review, review=review, steps=steps))
        finalize(expos, w, xs[-1], review)
    return xs


def test_the_best_review_score_wins_whatever_the_training(tmp_path):
    with new_run(tmp_path, budget_s=1000.0) as expos:
        x1, x2 = _two_submissions(expos, (0.2, 20), (0.1, 200))
        assert select(expos)["selected"] == x1


def test_tied_review_scores_go_to_the_checkpoint_with_more_training_behind_it(tmp_path):
    with new_run(tmp_path, budget_s=1000.0) as expos:
        x1, x2 = _two_submissions(expos, (0.0, 20), (0.0, 200))
        sel = select(expos)
        assert sel["selected"] == x2  # later submission, ten times the examples
        assert {r["experiment_id"]: r["lineage_examples"] for r in sel["submissions"]} == {x1: 160, x2: 1600}
        assert select(expos) == sel  # recorded once, reused
