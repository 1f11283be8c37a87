"""Seal keys: what a task's protected `dev`/`review`/`final` items are drawn from.

A run's protected items come from a secret made when its contract is frozen and kept
in the operator key directory (docs/runtime.md, "Secret seals"): nothing in the source
reproduces them. The public key, a constant seed, draws the *public* splits: the same
distribution, reproducible from the code, and therefore protecting nothing. Tests, the
measured landscape and v1 contracts (frozen before secrets) use it.

This module is part of the sealed evaluator's copy of the task suite, so it imports
only the standard library and the suite itself.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from typing import Any

from ._text import derive_seed

__all__ = ["MIN_SECRET_BYTES", "PUBLIC_SEAL_KEY", "PUBLIC_SEED", "SealKey"]

PUBLIC_SEED = 20_260_401  # the public splits; every contract before secret seals used them
MIN_SECRET_BYTES = 16  # below this a secret could be searched exhaustively
# Domain tag of the split derivation: a seal secret must not be usable as a key for
# anything else, and nothing else's MAC may coincide with a split seed.
_SPLIT_DOMAIN = b"rsi-master/protected-split/v2"


@dataclass(frozen=True)
class SealKey:
    """Either a secret (a run's protected splits) or a public seed (the public splits).

    `repr` never shows the secret: keys end up in tracebacks and logs.
    """

    secret: bytes | None = field(default=None, repr=False)
    seed: int | None = None

    def __post_init__(self) -> None:
        if (self.secret is None) == (self.seed is None):
            raise ValueError("a seal key holds exactly one of a secret and a public seed")
        if self.secret is not None:
            if not isinstance(self.secret, bytes) or len(self.secret) < MIN_SECRET_BYTES:
                raise ValueError(f"a seal secret must be at least {MIN_SECRET_BYTES} bytes")
        elif isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seal_seed must be an int, got {type(self.seed).__name__} {self.seed!r}")

    @property
    def is_public(self) -> bool:
        return self.secret is None

    def split_seed(self, task: str, split: str) -> int:
        """The RNG seed of one task's split.

        With a secret: HMAC-SHA256 keyed by it, so knowing the task, the split and every
        line of the code gives no handle on the items. The train and pretrain streams
        (`derive_seed("train", ...)`) never see the secret, so they cannot meet it either.
        """
        if self.secret is None:
            return derive_seed("eval", task, split, self.seed)
        message = b"\x1f".join((_SPLIT_DOMAIN, task.encode("utf-8"), split.encode("utf-8")))
        return int.from_bytes(hmac.new(self.secret, message, hashlib.sha256).digest(), "big")

    def to_wire(self) -> dict[str, Any]:
        """JSON for the pipe to the sealed evaluator (never for a file or a ledger)."""
        return {"seed": self.seed} if self.secret is None else {"secret": self.secret.hex()}

    @classmethod
    def from_wire(cls, data: Any) -> SealKey:
        if not isinstance(data, dict) or set(data) not in ({"seed"}, {"secret"}):
            raise ValueError("a seal key is {'secret': hex} or {'seed': int}")
        if "seed" in data:
            return cls(seed=data["seed"])
        try:
            return cls(secret=bytes.fromhex(data["secret"]))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bad seal secret: {exc}") from None


PUBLIC_SEAL_KEY = SealKey(seed=PUBLIC_SEED)
