"""Every event kind the package records, in one place.

The kinds are those with a payload model in `rsi_master.events` (the record path takes no
other). `rsi-master log --kind` checks a filter against this set, so that a typo is an error
instead of an empty table.
"""

from __future__ import annotations

from ..events import PAYLOADS

__all__ = ["EVENT_KINDS"]

EVENT_KINDS: frozenset[str] = frozenset(PAYLOADS)
