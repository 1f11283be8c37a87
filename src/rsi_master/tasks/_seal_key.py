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
    """A secret (a run's protected splits), a public seed (the public splits), or the seeds of a
    run's protected splits derived from its secret (`splits`: (task, split, seed) triples, all a
    job on another machine is handed; the secret stays with the harness on the driver).

    `repr` never shows the secret or the seeds: keys end up in tracebacks and logs.
    """

    secret: bytes | None = field(default=None, repr=False)
    seed: int | None = None
    splits: tuple[tuple[str, str, int], ...] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.secret, self.seed, self.splits)) != 1:
            raise ValueError("a seal key holds exactly one of a secret, a public seed and derived split seeds")
        if self.secret is not None:
            if not isinstance(self.secret, bytes) or len(self.secret) < MIN_SECRET_BYTES:
                raise ValueError(f"a seal secret must be at least {MIN_SECRET_BYTES} bytes")
        elif self.splits is not None:
            for entry in self.splits:
                if not (
                    isinstance(entry, tuple)
                    and len(entry) == 3
                    and all(isinstance(x, str) for x in entry[:2])
                    and isinstance(entry[2], int)
                    and not isinstance(entry[2], bool)
                ):
                    raise ValueError("derived split seeds are (task, split, int) triples")
        elif isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seal_seed must be an int, got {type(self.seed).__name__} {self.seed!r}")

    @property
    def is_public(self) -> bool:
        return self.seed is not None

    def split_seed(self, task: str, split: str) -> int:
        """The RNG seed of one task's split.

        With a secret: HMAC-SHA256 keyed by it, so knowing the task, the split and every
        line of the code gives no handle on the items. The train and pretrain streams
        (`derive_seed("train", ...)`) never see the secret, so they cannot meet it either.
        Derived seeds give only the splits they hold (ValueError for any other).
        """
        if self.splits is not None:
            for t, s, seed in self.splits:
                if (t, s) == (task, split):
                    return seed
            raise ValueError(f"this seal key holds no seed for task {task!r} split {split!r}")
        if self.secret is None:
            return derive_seed("eval", task, split, self.seed)
        message = b"\x1f".join((_SPLIT_DOMAIN, task.encode("utf-8"), split.encode("utf-8")))
        return int.from_bytes(hmac.new(self.secret, message, hashlib.sha256).digest(), "big")

    def derive(self, task: str, splits: tuple[str, ...]) -> SealKey:
        """The key holding only `task`'s seeds of `splits` (a public key stays as it is)."""
        if self.is_public:
            return self
        return SealKey(splits=tuple((task, s, self.split_seed(task, s)) for s in splits))

    def to_wire(self) -> dict[str, Any]:
        """JSON for the pipe to the sealed evaluator (never for a file or a ledger)."""
        if self.splits is not None:
            return {"splits": [list(e) for e in self.splits]}
        return {"seed": self.seed} if self.secret is None else {"secret": self.secret.hex()}

    @classmethod
    def from_wire(cls, data: Any) -> SealKey:
        if not isinstance(data, dict) or set(data) not in ({"seed"}, {"secret"}, {"splits"}):
            raise ValueError("a seal key is {'secret': hex}, {'seed': int} or {'splits': [[task, split, int], ...]}")
        if "seed" in data:
            return cls(seed=data["seed"])
        if "splits" in data:
            try:
                return cls(splits=tuple((t, s, n) for t, s, n in data["splits"]))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"bad split seeds: {exc}") from None
        try:
            return cls(secret=bytes.fromhex(data["secret"]))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bad seal secret: {exc}") from None


PUBLIC_SEAL_KEY = SealKey(seed=PUBLIC_SEED)
