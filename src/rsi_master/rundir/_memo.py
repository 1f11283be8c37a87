"""What verifying a run directory established, kept for the next verification of the same
directory in this process (a Reviewer audits the run dozens of times as it grows).

The ledger's memo and the artifact digests are sound whatever the files are now: each
verification still reads every row and stats every file, and re-checks in full whatever is
not byte-for-byte (rows) or signature-for-signature (files) what was checked before. See
`ledger._memo` and `artifacts._digests` for why. Nothing is written to disk: a verifier in a
fresh process (`rsi-master verify`) checks everything.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

from ..artifacts import DigestCache
from ..ledger import LedgerMemo

__all__ = ["VerifyMemo", "memo_for"]

# Run directories remembered per process: one campaign audits one run; tests open many.
_KEEP = 4


class VerifyMemo:
    """Pass to `verify_run(..., memo=)`; one verification uses it at a time."""

    def __init__(self) -> None:
        self.ledger = LedgerMemo()
        self.digests = DigestCache()
        self.lock = threading.Lock()


_memos: OrderedDict[str, VerifyMemo] = OrderedDict()
_memos_lock = threading.Lock()


def memo_for(path: Path | str) -> VerifyMemo:
    """This process's memo for the run directory at `path`."""
    key = os.path.abspath(path)
    with _memos_lock:
        memo = _memos.pop(key, None) or VerifyMemo()
        _memos[key] = memo
        while len(_memos) > _KEEP:
            _memos.popitem(last=False)
    return memo
