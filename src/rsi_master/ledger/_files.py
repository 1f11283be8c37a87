"""Atomic, durable file writes (shared by checkpoints and the key directory's records)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from .. import _durable

__all__ = ["write_bytes_atomic", "write_json_atomic"]


def write_json_atomic(path: Path, obj: object) -> None:
    """Write JSON so that a reader sees the old file or the new one, never a torn one."""
    write_bytes_atomic(path, json.dumps(obj, indent=1, sort_keys=True).encode())


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace `path` by `data` so that a reader sees the old file or the new one, never a torn one.

    The data is fsynced before the rename, so the file is never empty after power loss;
    the directory is not, so power loss may bring back the previous file. For a witness
    that is the safe direction (a witness behind the ledger is repaired by the next writer;
    one ahead of it would look like a rollback), and it saves an fsync per write."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            _durable.fsync(fd)
        finally:
            os.close(fd)
        if _durable.durable() or not _exchange(tmp, path):
            os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    if sys.platform != "linux":
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).renameat2
    except (ImportError, OSError, AttributeError):  # no ctypes here, or a libc before glibc 2.28
        return None


def _exchange(tmp: str, path: Path) -> bool:
    """Swap `tmp` into `path` with renameat2(RENAME_EXCHANGE) and unlink the old file; False
    where that is not available (then the caller renames over it).

    Only for writes that are not made durable: ext4 flushes the data of a file renamed over
    another (auto_da_alloc), which costs more than the rest of a witness update; an exchange
    is as atomic for readers and leaves the writeback to the kernel."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(tmp), at_fdcwd, os.fsencode(path), rename_exchange) != 0:
        return False  # no old file (ENOENT), or a filesystem without exchange (EINVAL)
    with contextlib.suppress(OSError):
        os.unlink(tmp)  # the old file now
    return True
