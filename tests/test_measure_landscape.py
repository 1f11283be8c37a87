"""The landscape report's arithmetic: seed averaging and the issue-3 target rules.

`scripts/measure_landscape.py` turns recorded evaluations into the claims of docs/tasks.md;
these tests pin the rules on synthetic records (no training)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "measure_landscape.py"


@pytest.fixture(scope="module")
def ml():
    spec = importlib.util.spec_from_file_location("measure_landscape", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rec(seed, scores, tokens=1000):
    return {"seed": seed, "points": [{"multiple": m, "score": s, "step": 1, "examples": 1} for m, s in scores.items()],
            "train_seconds": 10.0 * max(scores), "tokens": tokens}


def test_mean_curve_averages_each_multiple_over_the_seeds_that_measured_it(ml):
    c = ml.mean_curve([_rec(0, {0.5: 0.10, 1.0: 0.20, 5.0: 0.30, 8.0: 0.40}, tokens=8000),
                       _rec(1, {0.5: 0.04, 1.0: 0.10, 5.0: 0.20}, tokens=5000)])
    pts = {p["multiple"]: p for p in c["points"]}
    assert pts[0.5]["score"] == pytest.approx(0.07) and pts[0.5]["seeds"] == 2
    assert pts[5.0]["score"] == pytest.approx(0.25)
    assert pts[8.0]["score"] == pytest.approx(0.40) and pts[8.0]["seeds"] == 1
    # tokens/seconds describe the run whose horizon is the last point (the Main's cost model divides by it)
    assert c["tokens"] == 8000 and c["seeds"] == [0, 1]


def _landscape(curves, seeds=2):
    return {"tasks": {"t": {"base": {"score": 0.0}, "reference": {"score": 0.5},
                            "curves": {f: {"points": [{"multiple": m, "score": s, "seeds": seeds} for m, s in pts.items()]}
                                       for f, pts in curves.items()}}}}


def test_a_single_run_settles_only_a_wide_difference(ml):
    a = {1.0: 0.05, 2.0: 0.10, 3.0: 0.40}
    b = {1.0: 0.10, 2.0: 0.28, 3.0: 0.30}
    # repeated runs: an 18-point gap at 2x counts
    assert ml.targets(_landscape({"a": a, "b": b}))["t"]["family_gap"]["points"] == 18.0
    # one run each: 18 points is within what one run can be off by; nothing counts
    assert ml.targets(_landscape({"a": a, "b": b}, seeds=1))["t"]["family_gap"] is None
    # one run each, 35 points apart: settled
    res = ml.targets(_landscape({"a": a, "b": {**b, 2.0: 0.45}}, seeds=1))["t"]
    assert res["family_gap"]["points"] == 35.0 and res["family_gap"]["ahead"] == "b"


def test_crossing_needs_a_real_early_lead_and_a_real_late_deficit(ml):
    early = {0.5: 0.10, 1.0: 0.12, 2.0: 0.13, 5.0: 0.14}
    late = {0.5: 0.02, 1.0: 0.05, 2.0: 0.10, 5.0: 0.30}
    res = ml.targets(_landscape({"a": early, "b": late}))["t"]
    assert res["crossing"]["early_leader"] == "a" and res["crossing"]["overtaken_by"] == "b"
    # a 4.5-point early lead is inside the noise: no crossing
    res = ml.targets(_landscape({"a": {**early, 0.5: 0.065, 1.0: 0.08}, "b": late}))["t"]
    assert res["crossing"] is None
    # ahead early and behind by less than 5 points at the end: no crossing either
    res = ml.targets(_landscape({"a": {**early, 5.0: 0.26}, "b": late}))["t"]
    assert res["crossing"] is None


def test_family_gap_counts_only_plain_families(ml):
    res = ml.targets(_landscape({"a": {1.0: 0.0, 2.0: 0.0, 3.0: 0.0}, "a[k=1]": {1.0: 0.5, 2.0: 0.5, 3.0: 0.5},
                                 "b": {1.0: 0.1, 2.0: 0.2, 3.0: 0.16}}))["t"]
    # the labelled data-selection curve is 50 points above `a`, but gaps are between families
    assert res["family_gap"]["points"] == 20.0 and res["family_gap"]["ahead"] == "b"


def test_another_training_method_is_a_family_of_its_own(ml):
    assert ml.curve_label("trace", None) == "trace"
    assert ml.curve_label("trace", None, "lora") == "trace+lora"
    assert ml.curve_label("trace", {"max_depth": 1}, "lora") == "trace[max_depth=1]+lora"
    assert ml.curve_key("t", "trace+lora", 1) == "curve/t/trace+lora@s1"
    # a method is a structural difference: its gap to the full fine-tuning curve counts
    res = ml.targets(_landscape({"trace": {1.0: 0.1, 2.0: 0.3, 3.0: 0.4},
                                 "trace+lora": {1.0: 0.0, 2.0: 0.05, 3.0: 0.1}}))["t"]
    assert res["family_gap"]["points"] == 30.0 and res["family_gap"]["behind"] == "trace+lora"


def test_a_curve_at_another_batch_is_compared_only_with_curves_at_that_batch(ml):
    assert ml.curve_label("trace", None, "sft", 2) == "trace@b2"
    assert ml.curve_label("trace", {"max_depth": 1}, "lora", 2) == "trace[max_depth=1]+lora@b2"
    assert ml.curve_label("trace", None, "sft", 8) == "trace"
    assert [ml.label_batch(x) for x in ("trace", "trace@b2", "trace+lora@b4@s1", "trace@s2")] == [8, 2, 4, 8]
    # `trace@b2` is 50 points above `prog` (batch 8), but that is a batch change, not a family gap
    res = ml.targets(_landscape({"prog": {1.0: 0.0, 2.0: 0.0, 3.0: 0.0}, "trace": {1.0: 0.1, 2.0: 0.1, 3.0: 0.1},
                                 "trace@b2": {1.0: 0.5, 2.0: 0.5, 3.0: 0.5}, "prog@b2": {1.0: 0.2, 2.0: 0.3, 3.0: 0.3}}))["t"]
    assert (res["family_gap"]["points"], res["family_gap"]["ahead"], res["family_gap"]["behind"]) == (30.0, "trace@b2", "prog@b2")
    snap = "runs/landscape/curves/program_synthesis.trace_then_program@b2@s1/snapshots/step-005000"
    assert ml.parent_label(snap) == "SFT trace_then_program@b2@s1 x2 snapshot"


def test_a_probe_names_the_snapshot_it_started_from(ml):
    snap = "runs/landscape/curves/program_synthesis.trace_then_program@s1/snapshots/step-001250"
    assert ml.parent_label(snap) == "SFT trace_then_program@s1 x2 snapshot"
    assert ml.parent_label("runs/landscape/reference/knowledge/checkpoint") == "knowledge"
