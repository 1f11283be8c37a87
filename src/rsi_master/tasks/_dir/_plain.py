"""Plain data across the sandbox wall: the harness's side of the codec in `_sandbox_child.py`.

Decoding builds only built-in values (None, bool, int, float, str, list, tuple, set, frozenset,
dict, bytes) from parsed JSON, so nothing an answer sends can carry its own `__eq__`, `__hash__`
or `__bool__` into the harness's comparisons.
"""

from __future__ import annotations

import math
from typing import TypeAlias

__all__ = ["Plain", "PlainError", "decode", "encode", "json_equal", "to_json"]

Plain: TypeAlias = (
    "bool | int | float | str | bytes | list[Plain] | tuple[Plain, ...] | set[Plain] | "
    "frozenset[Plain] | dict[Plain, Plain] | None"
)
JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"

_DEPTH = 64
_TAGS = frozenset({"t", "s", "f", "d", "b"})


class PlainError(ValueError):
    """A value that is not plain data, or a reply that is not a well-formed encoding of one."""


def encode(value: object, depth: int = 0) -> object:
    """The wire form of a plain value; PlainError for anything else (a lambda, an object)."""
    if depth > _DEPTH:
        raise PlainError("nested too deeply")
    t = type(value)
    if value is None or t in (bool, int, float, str):
        return value
    if t is list:
        return [encode(x, depth + 1) for x in value]  # type: ignore[attr-defined]
    if t is tuple:
        return {"t": [encode(x, depth + 1) for x in value]}  # type: ignore[attr-defined]
    if t is set or t is frozenset:
        return {"s" if t is set else "f": [encode(x, depth + 1) for x in value]}  # type: ignore[attr-defined]
    if t is dict:
        return {"d": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}  # type: ignore[attr-defined]
    if t is bytes:
        return {"b": value.hex()}  # type: ignore[attr-defined]
    raise PlainError(f"a {t.__name__} is not plain data")


def decode(wire: object, depth: int = 0) -> Plain:
    """The built-in value of a wire form parsed by `json.loads`; PlainError when malformed."""
    if depth > _DEPTH:
        raise PlainError("nested too deeply")
    if wire is None or type(wire) in (bool, int, float, str):
        return wire  # type: ignore[return-value]
    if type(wire) is list:
        return [decode(x, depth + 1) for x in wire]
    if type(wire) is not dict or len(wire) != 1:
        raise PlainError("not a plain-data encoding")
    ((tag, body),) = wire.items()
    try:
        if tag == "b" and type(body) is str:
            return bytes.fromhex(body)
        if tag not in _TAGS or type(body) is not list:
            raise PlainError(f"unknown tag {str(tag)[:20]!r}")
        if tag == "t":
            return tuple(decode(x, depth + 1) for x in body)
        if tag == "s":
            return {decode(x, depth + 1) for x in body}
        if tag == "f":
            return frozenset(decode(x, depth + 1) for x in body)
        pairs = [(decode(k, depth + 1), decode(v, depth + 1)) for k, v in body]
        return dict(pairs)
    except (TypeError, ValueError) as exc:  # unhashable members, bad pairs or hex
        raise PlainError(f"not a plain-data encoding: {exc}") from None


def to_json(value: Plain) -> JsonValue:
    """The JSON value of a plain value (tuples become lists); PlainError for sets, bytes and
    dicts with keys other than text, which JSON does not have."""
    if value is None or type(value) in (bool, int, float, str):
        return value  # type: ignore[return-value]
    if type(value) in (list, tuple):
        return [to_json(x) for x in value]  # type: ignore[union-attr]
    if type(value) is dict and all(type(k) is str for k in value):
        return {k: to_json(v) for k, v in value.items()}  # type: ignore[misc]
    raise PlainError(f"a {type(value).__name__} is not JSON")


def json_equal(got: JsonValue, want: JsonValue, tolerance: float = 0.0) -> bool:
    """Equality of two JSON values by their JSON types: true is not 1, 1 is 1.0, and numbers
    within `tolerance` of each other are equal."""
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        if math.isnan(want) or math.isnan(got):
            return math.isnan(want) and math.isnan(got)
        return got == want or abs(got - want) <= tolerance
    if isinstance(want, list) and isinstance(got, list):
        return len(got) == len(want) and all(json_equal(g, w, tolerance) for g, w in zip(got, want, strict=True))
    if isinstance(want, dict) and isinstance(got, dict):
        return got.keys() == want.keys() and all(json_equal(got[k], want[k], tolerance) for k in want)
    return type(got) is type(want) and got == want
