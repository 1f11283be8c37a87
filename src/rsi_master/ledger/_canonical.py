"""Canonical JSON bytes (RFC 8785, JSON Canonicalization Scheme).

Hashes are taken over these bytes, so any reader in any language that implements JCS
recomputes the same digests.
"""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785

__all__ = ["canonical_bytes", "sha256_hex"]


def canonical_bytes(obj: Any) -> bytes:
    """RFC 8785 bytes of a JSON value; raises ValueError for NaN, infinities or non-JSON."""
    try:
        return rfc8785.dumps(obj)
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise ValueError(f"not canonicalisable JSON: {exc}") from exc


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
