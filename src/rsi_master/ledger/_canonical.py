"""Canonical JSON bytes (RFC 8785, JSON Canonicalization Scheme).

Hashes are taken over these bytes, so any reader in any language that implements JCS
recomputes the same digests.

For values without integers beyond 2**53, with keys in the Basic Multilingual Plane below
the surrogates, and with floats that are either integral below 2**53 (written as ints) or
written by `repr` as JCS writes them (see `_simple`), JCS output is exactly what the
C-accelerated `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)` writes
(same key order, same string escapes), which is many times faster than the pure-Python
`rfc8785` package. Everything else goes through `rfc8785`. Property tests check the two agree.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785

__all__ = ["canonical_bytes", "sha256_hex"]

_MAX_SAFE_INT = 2**53 - 1
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False).encode


_SLOW, _AS_IS, _INTEGRAL = 0, 1, 2  # what `_simple` finds


def _simple(value: Any) -> int:
    """_AS_IS when the fast encoder is guaranteed to produce JCS bytes for this value,
    _INTEGRAL when it is once its integral floats are ints, else _SLOW."""
    found = _AS_IS
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is str or v is None or t is bool:
            continue
        if t is int:
            if not -_MAX_SAFE_INT <= v <= _MAX_SAFE_INT:
                return _SLOW
        elif t is dict:
            for k, item in v.items():
                # UTF-16 and code-point order agree below U+D800.
                if type(k) is not str or (not k.isascii() and max(k) >= "\ud800"):
                    return _SLOW
                stack.append(item)
        elif t is float:
            # A non-integral float with 1e-4 <= |v| < 1e16 is written by repr in plain
            # positional notation with its shortest round-trip digits, which is its ES6
            # (JCS) form too; outside that range the forms differ. An integral float below
            # 2**53 is its integer's digits in JCS ("1.0" is "1"; -0.0 is "0"), which the
            # encoder writes for that int. NaN and infinities are neither.
            if v.is_integer():
                if not -_MAX_SAFE_INT <= v <= _MAX_SAFE_INT:
                    return _SLOW
                found = _INTEGRAL
            elif not 1e-4 <= abs(v) < 1e16:
                return _SLOW
        elif t is list or t is tuple:
            stack.extend(v)
        else:  # subclasses, anything else
            return _SLOW
    return found


def _integral_as_int(v: Any) -> Any:
    """A copy of a value `_simple` passed with its integral floats made ints."""
    t = type(v)
    if t is float:
        return int(v) if v.is_integer() else v
    if t is dict:
        return {k: _integral_as_int(x) for k, x in v.items()}
    if t is list or t is tuple:
        return [_integral_as_int(x) for x in v]
    return v


def canonical_bytes(obj: Any, *, checked: Any = None) -> bytes:
    """RFC 8785 bytes of a JSON value; raises ValueError for NaN, infinities or non-JSON.

    `checked`: the only part of `obj` whose types are not already known to be plain
    strings and safe integers (the payload of an event); the rest is not walked again.
    """
    try:
        found = _simple(obj if checked is None else checked)
        if found == _AS_IS:
            return _dumps(obj).encode("utf-8")
        if found == _INTEGRAL:
            return _dumps(_integral_as_int(obj)).encode("utf-8")
        return rfc8785.dumps(obj)
    except (rfc8785.CanonicalizationError, TypeError, UnicodeEncodeError) as exc:
        raise ValueError(f"not canonicalisable JSON: {exc}") from exc


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
