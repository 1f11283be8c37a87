from __future__ import annotations

import hashlib
import math

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from rsi_master.errors import MalformedEventError
from rsi_master.ledger import EventDraft, canonical_bytes, validate_draft
from rsi_master.ledger._event import seal


def test_canonical_bytes_follow_rfc8785():
    # Keys sorted, no whitespace, integral floats without a fraction, UTF-8 as is.
    assert canonical_bytes({"b": 1.0, "a": ["é", 1e21, None, True]}) == '{"a":["é",1e+21,null,true],"b":1}'.encode()
    with pytest.raises(ValueError):
        canonical_bytes({"x": math.nan})


def test_seal_hashes_the_canonical_body():
    d = validate_draft({"kind": "data.generate", "actor": {"role": "worker", "id": "w1"}, "payload": {"n": 3}})
    event, body = seal(d, seq=0, ts="2026-01-01T00:00:00Z", prev_hash="0" * 64)
    assert event.hash == hashlib.sha256(body).hexdigest()
    assert event.body_bytes() == body
    assert b'"hash"' not in body


@pytest.mark.parametrize(
    "bad,where",
    [
        ({"kind": "Bad Kind!", "actor": {"role": "worker", "id": "w"}}, "kind"),
        ({"kind": "ok", "actor": {"role": "worker"}}, "actor.id"),
        (
            {"kind": "ok", "actor": {"role": "worker", "id": "w"}, "artifacts": [{"digest": "abc", "role": "output"}]},
            "artifacts",
        ),
        ({"kind": "ok", "actor": {"role": "worker", "id": "w"}, "extra": 1}, "extra"),
    ],
)
def test_malformed_drafts_get_one_clear_error(bad, where):
    with pytest.raises(MalformedEventError) as exc:
        validate_draft(bad)
    assert where in str(exc.value) and "\n" not in str(exc.value)


def test_drafts_are_immutable():
    d = EventDraft.model_validate({"kind": "ok", "actor": {"role": "worker", "id": "w"}})
    with pytest.raises(ValidationError, match="frozen"):
        d.kind = "other"  # type: ignore[misc]


@pytest.mark.parametrize("payload", [{"x": math.inf}, {"x": math.nan}, {"big": 2**80}, {"k": [1, {"deep": -(2**60)}]}])
def test_payloads_json_cannot_carry_are_refused_and_nothing_is_written(tmp_path, payload):
    from rsi_master.rundir import RunDir

    with RunDir.create(tmp_path / "run") as run:
        run.record({"kind": "ok", "actor": {"role": "worker", "id": "w"}})
        with pytest.raises(MalformedEventError, match="payload"):
            run.record_many(
                [
                    {"kind": "ok", "actor": {"role": "worker", "id": "w"}},
                    {"kind": "ok", "actor": {"role": "worker", "id": "w"}, "payload": payload},
                ]
            )
        assert run.ledger.size() == 1


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_fast_canonical_path_agrees_with_rfc8785(value):
    assert canonical_bytes(value) == rfc8785.dumps(value)


_EDGE_FLOATS = [
    1e-4,
    math.nextafter(1e-4, 0),
    math.nextafter(1e-4, 1),
    1e16,
    math.nextafter(1e16, 0),
    2.0**52 + 0.5,
    2.0**53,
    0.1,
    1 / 3,
    123456789.125,
    5e-324,
    1e-7,
    1e21,
    0.0,
    -0.0,
    1.0,
    -2.5,
    3600.0,
    1e15,
    2.0**53 - 1,
    2.0**53 - 2,
    2.0**60,
]


@pytest.mark.parametrize("x", [*_EDGE_FLOATS, *(-x for x in _EDGE_FLOATS)])
def test_floats_at_the_edges_of_the_fast_path_are_jcs(x):
    assert canonical_bytes({"x": x, "l": [x, "s"]}) == rfc8785.dumps({"x": x, "l": [x, "s"]})


@settings(max_examples=2000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False) | st.floats(1e-5, 1e17) | st.floats(-1e17, -1e-5))
def test_every_float_is_written_as_rfc8785_writes_it(x):
    assert canonical_bytes([x]) == rfc8785.dumps([x])
