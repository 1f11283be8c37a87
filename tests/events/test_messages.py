"""Typed agent messages: the recommendation union, the recipe, and their place in the
worker.finalize and review.submit payloads (v1 records included)."""

from __future__ import annotations

import math

import pytest
from pydantic import TypeAdapter, ValidationError

from rsi_master.errors import MalformedEventError
from rsi_master.events import (
    Combine,
    Continue,
    Finding,
    Recipe,
    Recommendation,
    ReviewSubmit,
    Revise,
    Stop,
    WorkerFinalize,
    named_ids,
    typed,
)
from rsi_master.ledger import Actor, Event

RECOMMENDATION: TypeAdapter = TypeAdapter(Recommendation)


def test_a_recommendation_is_one_of_four_actions_each_with_the_ids_it_needs():
    c = RECOMMENDATION.validate_python(
        {"action": "continue", "experiment_id": "exp-00003", "worker_id": "w1", "reason": "train it further"}
    )
    assert isinstance(c, Continue) and c.text() == "continue exp-00003 w1: train it further"
    assert named_ids(c) == ({"exp-00003"}, {"w1"})
    m = RECOMMENDATION.validate_python({"action": "combine", "worker_ids": ["w1", "w2"], "reason": "complementary"})
    assert isinstance(m, Combine) and m.text() == "combine w1 w2: complementary"
    assert isinstance(RECOMMENDATION.validate_python({"action": "revise", "worker_id": "w2", "reason": "r"}), Revise)
    assert isinstance(RECOMMENDATION.validate_python({"action": "stop", "worker_ids": ["w2"], "reason": "r"}), Stop)
    for bad, where in (
        ("continue exp-00003 w1: more", "tagged-union"),  # prose is not a recommendation
        ({"action": "continue", "worker_id": "w1", "reason": "r"}, "experiment_id"),
        ({"action": "combine", "worker_ids": ["w1"], "reason": "r"}, "worker_ids"),  # two Workers, not one
        ({"action": "retrain", "worker_id": "w1", "reason": "r"}, "action"),
        ({"action": "stop", "worker_ids": ["w1"], "reason": ""}, "reason"),
        ({"action": "stop", "worker_ids": ["w1"], "reason": "r", "urgency": "high"}, "urgency"),  # closed
    ):
        with pytest.raises(ValidationError, match=where):
            RECOMMENDATION.validate_python(bad)


def test_a_recipes_dev_score_is_a_number_or_nothing():
    r = Recipe(experiment_id="exp-00003", family="scratchpad", config={"learning_rate": 1e-3, "batch_size": 8})
    assert r.config.batch_size == 8 and r.config.max_steps is None and r.mix == [] and r.parent == "base"
    with pytest.raises(ValidationError, match="finite"):
        Recipe(experiment_id="exp-00003", family="scratchpad", dev_score=math.nan)
    with pytest.raises(ValidationError, match="status"):
        Finding(claim="x", status="probably")


def _event(kind: str, payload: dict, version: int) -> Event:
    return Event(
        kind=kind,
        actor=Actor(role="reviewer", id="r1"),
        payload=payload,
        version=version,
        seq=3,
        ts="2026-01-01T00:00:00Z",
        prev_hash="0" * 64,
        hash="1" * 64,
    )


def test_the_payloads_nest_the_messages_and_v1_prose_reads_as_prose():
    report = {
        "request_seq": 1,
        "scope": ["w1"],
        "supported": [],
        "uncertainties": [],
        "violations": [],
        "regressions": [],
        "missing_comparisons": [],
        "verdict": "pass",
        "evidence": [],
        "findings": [{"claim": "exp-00003 review 0.4", "status": "supported", "split": "review", "score": 0.4}],
        "recommendations": [{"action": "stop", "experiment_ids": ["exp-00003"], "reason": "memorised"}],
    }
    p = typed(_event("review.submit", report, 2)).payload
    assert isinstance(p, ReviewSubmit) and isinstance(p.recommendations[0], Stop) and p.findings[0].score == 0.4
    old = {**report, "recommendations": ["continue exp-00003 w1: more"]}
    del old["findings"]
    p = typed(_event("review.submit", old, 1)).payload
    assert p.recommendations == ["continue exp-00003 w1: more"] and p.findings == []
    with pytest.raises(MalformedEventError, match="verdict"):
        typed(_event("review.submit", {**report, "verdict": "maybe"}, 2))
    fin = {
        "summary": "s",
        "claims": [],
        "candidates": ["exp-00003"],
        "recipe": {"experiment_id": "exp-00003", "family": "scratchpad"},
    }
    p = typed(_event("worker.finalize", fin, 2)).payload
    assert isinstance(p, WorkerFinalize) and p.recipe.family == "scratchpad"
    assert typed(_event("worker.finalize", {k: v for k, v in fin.items() if k != "recipe"}, 1)).payload.recipe is None
