"""Whether writes are made durable (fsynced) before they count as done.

On by default: the ledger (SQLite `synchronous = FULL`), its witness and the artifact store
fsync what they write, so a power loss never leaves a run that looks rolled back. A process that
writes only throw-away runs (the simulated bench's campaigns in a temporary directory) may turn
it off for a block (`not_durable`): every byte, digest, signature and chain link is written the
same, so `verify` and `audit` read such a run like any other; only a crash of the machine could
lose its tail.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["durable", "fsync", "not_durable"]

_durable = True
_lock = threading.Lock()


def durable() -> bool:
    return _durable


def fsync(fd: int) -> None:
    if _durable:
        os.fsync(fd)


@contextmanager
def not_durable() -> Iterator[None]:
    global _durable
    with _lock:
        before, _durable = _durable, False
    try:
        yield
    finally:
        with _lock:
            _durable = before
