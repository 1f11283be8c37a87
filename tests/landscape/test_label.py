"""The one curve label: parsing and formatting the grammar, round trip, clear errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rsi_master.landscape import CURVE_BATCH, SHIPPED, CurveLabel, LabelError, load


def test_every_shipped_curve_label_reads_and_writes_back_the_same():
    labels = [label for t in load(SHIPPED).tasks.values() for label in t.curves]
    assert len(labels) > 20
    for label in labels:
        assert str(CurveLabel.parse(label)) == label


@pytest.mark.parametrize(
    "text,parts",
    [
        ("trace", {"family": "trace"}),
        ("scratchpad[ops=add]", {"family": "scratchpad", "knobs": (("ops", "add"),)}),
        ("chain[two_hop=0.0]", {"family": "chain", "knobs": (("two_hop", "0.0"),)}),  # 0.0 stays 0.0
        ("trace+lora", {"family": "trace", "method": "lora"}),
        ("outputs+prompt_loss", {"family": "outputs", "prompt_loss": True}),
        (
            "trace[max_depth=1]+lora+prompt_loss@b2@s3",
            {
                "family": "trace",
                "knobs": (("max_depth", "1"),),
                "method": "lora",
                "prompt_loss": True,
                "batch": 2,
                "seed": 3,
            },
        ),
        ("trace@s2", {"family": "trace", "seed": 2}),
        ("plan[a=1,b=x]@b4", {"family": "plan", "knobs": (("a", "1"), ("b", "x")), "batch": 4}),
    ],
)
def test_labels_parse_into_their_parts_and_back(text, parts):
    label = CurveLabel.parse(text)
    assert label == CurveLabel(**parts)
    assert str(label) == text


_name = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)


@given(
    family=_name,
    knobs=st.dictionaries(_name, st.one_of(st.integers(-5, 50), _name, st.floats(0, 1)), max_size=3),
    method=st.sampled_from(["sft", "lora", "dpo"]),
    prompt_loss=st.booleans(),
    batch=st.integers(1, 64),
    seed=st.integers(0, 9),
)
def test_any_label_made_from_parts_round_trips(family, knobs, method, prompt_loss, batch, seed):
    label = CurveLabel.of(family, knobs, method, batch, prompt_loss, seed)
    assert CurveLabel.parse(str(label)) == label
    assert label.batch == batch and label.seed == seed and dict(label.knobs) == {k: str(v) for k, v in knobs.items()}


def test_related_labels():
    run = CurveLabel.parse("trace[max_depth=1]+lora@b2@s1")
    assert str(run.curve) == "trace[max_depth=1]+lora@b2"
    assert str(run.recipe) == "trace[max_depth=1]+lora"
    assert str(run.at_batch(CURVE_BATCH).curve) == "trace[max_depth=1]+lora"
    assert run.selection == "max_depth=1" and not run.is_family and CurveLabel.parse("trace").is_family
    assert str(CurveLabel.of_selection("chain", "two_hop=0.0")) == "chain[two_hop=0.0]"
    assert CurveLabel.of_selection("chain") == CurveLabel(family="chain")


@pytest.mark.parametrize(
    "text,says",
    [
        ("", "does not read as"),
        ("trace[", "does not read as"),
        ("trace[]", "is not knob=value"),
        ("trace[ops]", "is not knob=value"),
        ("trace[b=1,a=2]", "sorted"),
        ("trace[a=1,a=2]", "sorted"),
        ("trace+lora+dpo", "at most one method"),
        ("trace+sft", "at most one method"),
        ("trace+prompt_loss+lora", "at most one method"),
        ("trace@b8", "other than the curves' 8"),
        ("trace@b0", "other than the curves' 8"),
        ("trace@s0", "nonzero seed"),
        ("trace@s1@b2", "does not read as"),
        ("trace label", "does not read as"),
    ],
)
def test_a_malformed_label_is_refused_with_what_is_wrong(text, says):
    with pytest.raises(LabelError, match=says) as err:
        CurveLabel.parse(text)
    assert repr(text) in str(err.value) and "\n" not in str(err.value)


def test_a_label_is_a_string():
    with pytest.raises(LabelError, match="a curve label is a string"):
        CurveLabel.parse(8)  # type: ignore[arg-type]
