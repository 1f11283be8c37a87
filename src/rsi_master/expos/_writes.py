"""Bounded writes through the door.

Two ways a caller could grow the ledger without limit, each closed here:

- **A capability's own calls.** Every call of a capability leaves events (its tool call, an
  invalid input, a refusal). `WriteQuota` sums the stored bytes of the events each capability
  acted in, incrementally from the ledger (the truth shared by every process that writes), and
  refuses the next call of a capability at its quota (`budget.write_quota_bytes` of the
  contract). A call is checked before it runs, so a capability may end one call's events
  (at most the door's request cap) past its quota, never more.
- **Calls the door cannot name a caller for** (no valid capability), and calls of a capability
  over its quota. Recording each would hand the ledger's growth to whoever can connect to the
  socket; `RefusalMeter` counts them per peer uid (SO_PEERCRED) and kind, and the door writes
  one `door.refusals` event per window with the count, not one event per call.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from ..events import DoorRefusals, typed
from ..ledger import Ledger
from ._errors import ToolRefused

if TYPE_CHECKING:
    from ._reader import RunReader

__all__ = [
    "DOOR_ACTOR",
    "REFUSAL_INTERVAL_S",
    "CapabilityWrites",
    "DoorWrites",
    "QuotaExceeded",
    "RefusalMeter",
    "Window",
    "WriteQuota",
    "door_writes",
]

# A minute: an attack costs at most one event per peer and kind a minute, and an operator
# reading the ledger sees it within that minute.
REFUSAL_INTERVAL_S = 60.0
# Distinct reasons kept per window; the rest are counted under `other`.
_REASONS = 8
_REASON_CHARS = 200

# Who records the windows: the harness's door, so that readers find them by author.
DOOR_ACTOR = {"role": "harness", "id": "door"}

Refusal = Literal["unauthenticated", "over_quota"]


class QuotaExceeded(ToolRefused):
    """The capability has written its quota of ledger bytes: nothing more is accepted from it."""


class WriteQuota:
    """Ledger bytes written per capability, read incrementally; `check` refuses one at its quota."""

    def __init__(self, ledger: Ledger, limit: int) -> None:
        self.ledger = ledger
        self.limit = limit
        self._used: Counter[str] = Counter()
        self._seen = 0  # events before this seq are counted
        self._lock = threading.Lock()

    def used(self, cap: str) -> int:
        with self._lock:
            size = self.ledger.size()
            if size > self._seen:
                self._used.update(self.ledger.bytes_by_capability(since=self._seen, until=size))
                self._seen = size
            return self._used[cap]

    def check(self, cap: str | None) -> None:
        """Refuse (QuotaExceeded) a call of capability `cap` if it is at its quota."""
        if cap is None:
            return
        used = self.used(cap)
        if used >= self.limit:
            raise QuotaExceeded(
                f"capability {cap} has written {used} bytes to the ledger; its quota is {self.limit} "
                "(the contract's budget.write_quota_bytes): no more calls are accepted from it"
            )


def _utc(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class Window:
    """Refusals of one peer and kind since `opened` (monotonic), to be written as one event."""

    refusal: Refusal
    peer_uid: int | None
    caller: tuple[str, str] | None  # (node, capability id) of a capability over its quota
    opened: float
    first: float
    last: float = 0.0
    count: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def payload(self, interval_s: float) -> DoorRefusals:
        top = self.reasons.most_common(_REASONS)
        reasons = dict(top)
        rest = self.count - sum(reasons.values())
        if rest:
            reasons["other"] = reasons.get("other", 0) + rest
        return DoorRefusals(
            refusal=self.refusal,
            peer_uid=self.peer_uid,
            node=None if self.caller is None else self.caller[0],
            cap=None if self.caller is None else self.caller[1],
            count=self.count,
            first=_utc(self.first),
            last=_utc(self.last),
            interval_s=interval_s,
            reasons=reasons,
        )


class RefusalMeter:
    """Counts refused calls per (kind, peer uid, actor) in windows of `interval_s` seconds.

    `note` is called from any thread for each refusal; `due` hands back the windows that have
    run their interval (all of them with `everything`), each to be recorded as one event."""

    def __init__(self, interval_s: float = REFUSAL_INTERVAL_S) -> None:
        if interval_s <= 0:
            raise ValueError("the refusal interval must be positive")
        self.interval_s = interval_s
        self._open: dict[tuple[Refusal, int | None, tuple[str, str] | None], Window] = {}
        self._lock = threading.Lock()

    def note(self, refusal: Refusal, peer_uid: int | None, reason: str, caller: tuple[str, str] | None = None) -> None:
        now, wall = time.monotonic(), time.time()
        key = (refusal, peer_uid, caller)
        with self._lock:
            w = self._open.get(key)
            if w is None:
                w = self._open[key] = Window(refusal, peer_uid, key[2], opened=now, first=wall)
            w.count += 1
            w.last = wall
            if reason[:_REASON_CHARS] in w.reasons or len(w.reasons) < _REASONS:
                w.reasons[reason[:_REASON_CHARS]] += 1

    def pending(self) -> bool:
        """Whether a window has run its interval (cheap: the server's loop asks it each turn)."""
        now = time.monotonic()
        with self._lock:
            return any(now - w.opened >= self.interval_s for w in self._open.values())

    def due(self, *, everything: bool = False) -> list[Window]:
        now = time.monotonic()
        with self._lock:
            keys = [k for k, w in self._open.items() if everything or now - w.opened >= self.interval_s]
            return [self._open.pop(k) for k in keys]


class CapabilityWrites(BaseModel):
    """What one capability wrote to the ledger."""

    cap: str = Field(description="Capability id.")
    bytes: int = Field(description="Stored bytes of the events it acted in.")
    over_quota: bool = Field(description="Whether it reached the contract's write quota.")


class DoorWrites(BaseModel):
    """The ledger's growth through the door, for the audit."""

    quota_bytes: int = Field(description="The contract's per-capability write quota (budget.write_quota_bytes).")
    by_capability: list[CapabilityWrites] = Field(description="Every capability that wrote, largest first.")
    refused_unauthenticated: int = Field(
        description="Calls refused for want of a valid capability (the door's windows, and one-by-one records)."
    )
    refused_over_quota: int = Field(description="Calls refused because their capability was at its quota.")
    refusal_events: int = Field(description="`door.refusals` events those counts come from.")


def door_writes(reader: RunReader) -> DoorWrites:
    """Bytes per capability (one query over the ledger) and the door's refusal counts."""
    limit = reader.contract.budget.write_quota_bytes
    by_cap = reader.ledger.bytes_by_capability()
    windows = [typed(e, DoorRefusals).payload for e in reader.own_events("door.refusals")]
    one_by_one = sum(1 for e in reader.events("guard.blocked", actor_id="unauthenticated", role="public"))
    return DoorWrites(
        quota_bytes=limit,
        by_capability=[
            CapabilityWrites(cap=c, bytes=n, over_quota=n >= limit)
            for c, n in sorted(by_cap.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        refused_unauthenticated=one_by_one + sum(w.count for w in windows if w.refusal == "unauthenticated"),
        refused_over_quota=sum(w.count for w in windows if w.refusal == "over_quota"),
        refusal_events=len(windows),
    )
