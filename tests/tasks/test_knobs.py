"""Generator parameter validation (`_knobs.py`) through every family."""

from __future__ import annotations

import pytest

from rsi_master.tasks import get_task
from rsi_master.tasks._knobs import validate_params, validate_size
from rsi_master.tasks._protocol import Knob

from .helpers import TASK_NAMES

KNOBS = (
    Knob("count", "int", 2, 1, 5),
    Knob("rate", "float", 0.5, 0.0, 1.0),
    Knob("style", "choice", "a", choices=("a", "b")),
    Knob("flag", "choice", True, choices=(True, False)),
)


def test_defaults_are_filled():
    assert validate_params("f", KNOBS, {}) == {"count": 2, "rate": 0.5, "style": "a", "flag": True}
    assert validate_params("f", KNOBS, None)["count"] == 2


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"nope": 1}, "unknown knob"),
        ({"count": "3"}, "expected an int"),
        ({"count": 2.0}, "expected an int"),
        ({"count": True}, "expected an int"),
        ({"count": 0}, "below the minimum"),
        ({"count": 6}, "above the maximum"),
        ({"rate": float("nan")}, "not finite"),
        ({"rate": "0.5"}, "expected a number"),
        ({"rate": 1.5}, "above the maximum"),
        ({"style": "c"}, "not one of"),
        ({"flag": 1}, "not one of"),
    ],
)
def test_bad_params_name_the_knob(params, message):
    with pytest.raises(ValueError, match=message):
        validate_params("f", KNOBS, params)


def test_params_must_be_a_mapping():
    with pytest.raises(ValueError, match="mapping"):
        validate_params("f", KNOBS, [("count", 2)])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seed", "n", "message"), [(0, -1, ">= 0"), (0, 1.5, "n must be an int"), ("0", 1, "seed"), (0, 10**9, "<=")]
)
def test_bad_sizes(seed, n, message):
    with pytest.raises(ValueError, match=message):
        validate_size(seed, n)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_every_family_validates(name):
    task = get_task(name)
    for family in task.generators().values():
        assert family.generate({}, 0, 0) == []
        with pytest.raises(ValueError, match="unknown knob"):
            family.generate({"no_such_knob": 1}, 0, 1)
        with pytest.raises(ValueError, match=">= 0"):
            family.generate({}, 0, -5)
        for knob in family.knobs:
            if knob.kind == "choice":
                bad = object()
            elif knob.high is not None:
                bad = knob.high + 1
            else:  # pragma: no cover - every numeric knob of the suite is bounded
                continue
            with pytest.raises(ValueError, match=knob.name):
                family.generate({knob.name: bad}, 0, 1)


@pytest.mark.parametrize(
    ("name", "family", "params", "message"),
    [
        ("arithmetic", "scratchpad", {"min_digits": 3, "max_digits": 2}, "min_digits"),
        ("program_synthesis", "program_only", {"min_depth": 3, "max_depth": 1}, "min_depth"),
        ("program_synthesis", "program_only", {"min_len": 5, "max_len": 4}, "min_len"),
        ("function_calling", "compact", {"max_arity": 1, "n_functions": 2}, "no function"),
    ],
)
def test_cross_knob_constraints(name, family, params, message):
    with pytest.raises(ValueError, match=message):
        get_task(name).generator(family).generate(params, 0, 1)


def test_unknown_family_is_named():
    with pytest.raises(ValueError, match=r"no generator 'nope'.*known"):
        get_task("arithmetic").generator("nope")
