"""Atomic, durable file writes (shared by checkpoints and the key directory's records)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .. import _durable

__all__ = ["write_json_atomic"]


def write_json_atomic(path: Path, obj: object) -> None:
    """Write JSON so that a reader sees the old file or the new one, never a torn one.

    The data is fsynced before the rename, so the file is never empty after power loss;
    the directory is not, so power loss may bring back the previous file. For a witness
    that is the safe direction (a witness behind the ledger is repaired by the next writer;
    one ahead of it would look like a rollback), and it saves an fsync per write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(obj, fh, indent=1, sort_keys=True)
            fh.flush()
            _durable.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
