"""Filesystem steps of the local store: durable hashing, directory fsync, and a stored
directory materialised as a read-only tree of hard links to its files' blobs."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from .. import _durable
from ._measure import CHUNK

__all__ = ["FILE_MODE", "force_remove", "fsync_dir", "hash_and_sync", "materialise"]

FILE_MODE = 0o444
_DIR_MODE = 0o555


def hash_and_sync(path: Path) -> str:
    h = hashlib.sha256()
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    with open(path, "rb+", buffering=0) as fh:
        _durable.fsync(fh.fileno())  # start from durable bytes; usually a no-op for a flushed file
        while n := fh.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        _durable.fsync(fd)
    finally:
        os.close(fd)


def force_remove(path: Path) -> None:
    for dirpath, _, _ in os.walk(path):
        os.chmod(dirpath, 0o755)
    shutil.rmtree(path)


def materialise(tree: Path, tmp: Path, entries: list[tuple[str, str]], blob: Callable[[str], Path]) -> None:
    """Build `tree` (absent) from stored blobs: hard links where the filesystem has them, else
    read-only copies; staged under `tmp` and renamed into place whole."""
    staging = Path(tempfile.mkdtemp(dir=tmp))
    try:
        for rel, d in entries:
            dest = staging / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(blob(d), dest)
            except OSError:  # no hard links here: fall back to a copy
                dest.write_bytes(blob(d).read_bytes())
                os.chmod(dest, FILE_MODE)
        for dirpath, _, _ in os.walk(staging, topdown=False):
            if dirpath != str(staging):
                os.chmod(dirpath, _DIR_MODE)
        # The top directory is made read-only only once in place: moving a directory to
        # another parent rewrites its `..`, which needs write permission on it (root skips
        # that check, every other user does not).
        try:
            os.rename(staging, tree)
        except OSError:
            if not tree.is_dir():
                raise
            force_remove(staging)  # another writer materialised it first
        else:
            os.chmod(tree, _DIR_MODE)
        fsync_dir(tree.parent)
    except BaseException:
        if staging.exists():
            force_remove(staging)
        raise
