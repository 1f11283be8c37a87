"""The landscape file from the raw figures: seed averaging and the issue-3 target rules, on
synthetic records (no training), and the shipped file rebuilt from the shipped results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_master.landscape import (
    SHIPPED,
    CurveLabel,
    CurveRow,
    Landscape,
    build,
    curve_key,
    dumps,
    mean_curve,
    parent_label,
    read_rows,
    targets,
)

ROOT = Path(__file__).resolve().parents[2]


def _rec(seed, scores, tokens=1000):
    return CurveRow(
        key=f"curve/t/a@s{seed}",
        task="t",
        kind="curve",
        family="a",
        seed=seed,
        points=[{"multiple": m, "score": s, "step": 1, "examples": 1} for m, s in scores.items()],
        train_seconds=10.0 * max(scores),
        tokens=tokens,
    )


def test_mean_curve_averages_each_multiple_over_the_seeds_that_measured_it():
    c = mean_curve(
        [
            _rec(0, {0.5: 0.10, 1.0: 0.20, 5.0: 0.30, 8.0: 0.40}, tokens=8000),
            _rec(1, {0.5: 0.04, 1.0: 0.10, 5.0: 0.20}, tokens=5000),
        ]
    )
    pts = {p.multiple: p for p in c.points}
    assert pts[0.5].score == pytest.approx(0.07) and pts[0.5].seeds == 2 and pts[0.5].per_seed == [0.10, 0.04]
    assert pts[0.5].spread == pytest.approx(0.06)
    assert pts[5.0].score == pytest.approx(0.25)
    assert pts[8.0].score == pytest.approx(0.40) and pts[8.0].seeds == 1
    # tokens/seconds describe the run whose horizon is the last point (the Main's cost model divides by it)
    assert c.tokens == 8000 and c.seeds == [0, 1] and c.horizon == 8.0


def _landscape(curves, seeds=2):
    return Landscape.model_validate(
        {
            "tasks": {
                "t": {
                    "base": {"score": 0.0},
                    "reference": {"score": 0.5, "family": "a"},
                    "curves": {
                        f: {"points": [{"multiple": m, "score": s, "seeds": seeds} for m, s in pts.items()]}
                        for f, pts in curves.items()
                    },
                }
            }
        }
    )


def _t(curves, seeds=2):
    return targets(_landscape(curves, seeds)).tasks["t"]


def test_a_single_run_settles_only_a_wide_difference():
    a = {1.0: 0.05, 2.0: 0.10, 3.0: 0.40}
    b = {1.0: 0.10, 2.0: 0.28, 3.0: 0.30}
    # repeated runs: an 18-point gap at 2x counts
    assert _t({"a": a, "b": b}).family_gap.points == 18.0
    # one run each: 18 points is within what one run can be off by; nothing counts
    assert _t({"a": a, "b": b}, seeds=1).family_gap is None
    # one run each, 35 points apart: settled
    res = _t({"a": a, "b": {**b, 2.0: 0.45}}, seeds=1)
    assert res.family_gap.points == 35.0 and res.family_gap.ahead == "b"


def test_crossing_needs_a_real_early_lead_and_a_real_late_deficit():
    early = {0.5: 0.10, 1.0: 0.12, 2.0: 0.13, 5.0: 0.14}
    late = {0.5: 0.02, 1.0: 0.05, 2.0: 0.10, 5.0: 0.30}
    res = _t({"a": early, "b": late})
    assert res.crossing.early_leader == "a" and res.crossing.overtaken_by == "b"
    # a 4.5-point early lead is inside the noise: no crossing
    assert _t({"a": {**early, 0.5: 0.065, 1.0: 0.08}, "b": late}).crossing is None
    # ahead early and behind by less than 5 points at the end: no crossing either
    assert _t({"a": {**early, 5.0: 0.26}, "b": late}).crossing is None


def test_family_gap_counts_only_plain_families():
    res = _t(
        {
            "a": {1.0: 0.0, 2.0: 0.0, 3.0: 0.0},
            "a[k=1]": {1.0: 0.5, 2.0: 0.5, 3.0: 0.5},
            "b": {1.0: 0.1, 2.0: 0.2, 3.0: 0.16},
        }
    )
    # the labelled data-selection curve is 50 points above `a`, but gaps are between families
    assert res.family_gap.points == 20.0 and res.family_gap.ahead == "b"


def test_another_training_method_is_a_family_of_its_own():
    assert str(CurveLabel.of("trace", None)) == "trace"
    assert str(CurveLabel.of("trace", None, "lora")) == "trace+lora"
    assert str(CurveLabel.of("trace", {"max_depth": 1}, "lora")) == "trace[max_depth=1]+lora"
    assert curve_key("t", CurveLabel.of("trace", None, "lora", seed=1)) == "curve/t/trace+lora@s1"
    # a method is a structural difference: its gap to the full fine-tuning curve counts
    res = _t({"trace": {1.0: 0.1, 2.0: 0.3, 3.0: 0.4}, "trace+lora": {1.0: 0.0, 2.0: 0.05, 3.0: 0.1}})
    assert res.family_gap.points == 30.0 and res.family_gap.behind == "trace+lora"


def test_a_curve_at_another_batch_is_compared_only_with_curves_at_that_batch():
    assert str(CurveLabel.of("trace", None, "sft", 2)) == "trace@b2"
    assert str(CurveLabel.of("trace", {"max_depth": 1}, "lora", 2)) == "trace[max_depth=1]+lora@b2"
    assert str(CurveLabel.of("trace", None, "sft", 8)) == "trace"
    assert [CurveLabel.parse(x).batch for x in ("trace", "trace@b2", "trace+lora@b4@s1", "trace@s2")] == [8, 2, 4, 8]
    # `trace@b2` is 50 points above `prog` (batch 8), but that is a batch change, not a family gap
    res = _t(
        {
            "prog": {1.0: 0.0, 2.0: 0.0, 3.0: 0.0},
            "trace": {1.0: 0.1, 2.0: 0.1, 3.0: 0.1},
            "trace@b2": {1.0: 0.5, 2.0: 0.5, 3.0: 0.5},
            "prog@b2": {1.0: 0.2, 2.0: 0.3, 3.0: 0.3},
        }
    )
    assert (res.family_gap.points, res.family_gap.ahead, res.family_gap.behind) == (30.0, "trace@b2", "prog@b2")
    snap = "runs/landscape/curves/program_synthesis.trace_then_program@b2@s1/snapshots/step-005000"
    assert parent_label(snap) == "SFT trace_then_program@b2@s1 x2 snapshot"


def test_a_probe_names_the_snapshot_it_started_from():
    snap = "runs/landscape/curves/program_synthesis.trace_then_program@s1/snapshots/step-001250"
    assert parent_label(snap) == "SFT trace_then_program@s1 x2 snapshot"
    assert parent_label("runs/landscape/reference/knowledge/checkpoint") == "knowledge"


def test_the_shipped_landscape_is_what_the_shipped_results_build():
    """Nothing in the shipped file is typed by hand: rebuilding it from the tracked raw
    figures gives it back byte for byte."""
    built = build(read_rows(ROOT / "benchmarks" / "landscape" / "results.jsonl"))
    assert dumps(built) == SHIPPED.read_text()
    shipped = json.loads(SHIPPED.read_text())
    assert shipped["version"] == 2 and set(shipped["tasks"]) == {
        "arithmetic",
        "function_calling",
        "knowledge",
        "program_synthesis",
    }
    assert built.targets.crossing_ok and all(t.family_gap_ok for t in built.targets.tasks.values())
