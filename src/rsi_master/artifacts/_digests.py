"""Digests of stored files remembered across verifications in one process, re-measured only
for files that may have changed since.

A remembered digest is reused while the file's stat signature (inode, mode, links, owner,
size, mtime and ctime) is unchanged, as git's index does. What makes that safe against an
agent with the run's own user id is the ctime: writing, truncating, renaming, linking or
chmod-ing a file sets it to the current time, and only root can set it back. Two ways to
change bytes without moving it remain, and a digest is remembered only when neither can apply:

- a change within the timestamp granularity of the last one leaves ctime as it was: a file
  is remembered only once its ctime is `SETTLED_NS` in the past, so any later change stamps
  a later time;
- a write through a shared writable mapping moves ctime at its first fault only, so a page
  dirtied (with its old bytes) before the file is measured can be changed afterwards
  unseen: a file is remembered only if a read lease can be taken on it, which Linux grants
  only while nobody (no descriptor, no mapping) has it open for writing. Any later writer
  opens it anew, and its first write, by `write` or by a fresh mapping, moves ctime.

A stored directory's manifest is kept parsed under its digest: the parse of bytes that hash
to the name (`manifest`), used only when the blob hashed to its name in the same pass.

Where leases are not available (another OS, leases disabled, a file owned by someone else)
nothing is remembered and every verification re-hashes every byte, as without a cache. A
verifier in a fresh process starts with an empty cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import ArtifactError
from ._measure import CHUNK, _open_regular, parse_manifest, read_measured

__all__ = ["SETTLED_NS", "DigestCache"]

# FAT's 2 s is the coarsest timestamp granularity in common use; ext4, xfs, btrfs and tmpfs
# stamp from a clock that ticks every few milliseconds.
SETTLED_NS = 2_000_000_000

# A lease break (someone opening the file for writing while the probe holds the lease)
# signals the holder: SIGIO by default, which would end the process. SIGURG is ignored by
# default and used by nothing in Python.
_BREAK_SIGNAL = getattr(signal, "SIGURG", 0)

Signature = tuple[int, ...]


def _signature(st: os.stat_result) -> Signature:
    return (st.st_dev, st.st_ino, st.st_mode, st.st_nlink, st.st_uid, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _no_writers(fd: int) -> bool:
    """True if nobody had the file open for writing (a writable mapping included) just now."""
    try:
        import fcntl

        setlease, setsig = fcntl.F_SETLEASE, fcntl.F_SETSIG
    except (ImportError, AttributeError):  # not Linux
        return False
    try:
        fcntl.fcntl(fd, setsig, _BREAK_SIGNAL)
        fcntl.fcntl(fd, setlease, fcntl.F_RDLCK)
    except OSError:  # EAGAIN: a writer has it open; EACCES, EINVAL: no leases here
        return False
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, setlease, fcntl.F_UNLCK)
    return True


def _measure(path: Path | str) -> tuple[str, Signature | None]:
    """(SHA-256 of the file, its signature if the digest may be remembered under it, else None)."""
    with os.fdopen(_open_regular(path), "rb", buffering=0) as fh:
        before = os.fstat(fh.fileno())
        # Taken before the lease: every write after the lease is stamped at or after this time.
        now = time.time_ns()
        settled = before.st_ctime_ns < now - SETTLED_NS and _no_writers(fh.fileno())
        first = fh.read(CHUNK)
        h = hashlib.sha256(first)
        if len(first) == CHUNK:
            buf = bytearray(CHUNK)
            view = memoryview(buf)
            while n := fh.readinto(buf):
                h.update(view[:n])
        after = os.fstat(fh.fileno())
    sig = _signature(before)
    return h.hexdigest(), sig if settled and _signature(after) == sig else None


class DigestCache:
    """File digests for one verifier in one process (keep one per run directory)."""

    def __init__(self) -> None:
        self._known: dict[tuple[int, int], tuple[Signature, str]] = {}
        self._seen: set[tuple[int, int]] = set()
        self._manifests: dict[str, dict[str, str]] = {}
        self._manifests_seen: set[str] = set()
        self._stamped: dict[str, tuple[tuple[object, ...], str]] = {}
        self.not_manifests: set[str] = set()
        """Digests of shared-store blobs read and found not to be a directory's manifest (the
        bytes of a name are fixed: one that no longer hashes to it is named by the scan)."""
        self.hashed = 0
        """Files read and hashed (by this cache's lifetime)."""
        self.reused = 0
        """Digests reused without reading."""

    def digest(self, path: Path | str, st: os.stat_result) -> str:
        """SHA-256 of the regular file at `path`, whose `os.lstat` is `st`.
        ArtifactError if it is not a regular file or cannot be read."""
        key = (st.st_dev, st.st_ino)
        self._seen.add(key)
        known = self._known.get(key)
        if known is not None and known[0] == _signature(st):
            self.reused += 1
            return known[1]
        self.hashed += 1
        digest, sig = _measure(path)
        self._known.pop(key, None)
        if sig is not None:
            self._seen.add((sig[0], sig[1]))
            self._known[(sig[0], sig[1])] = (sig, digest)
        return digest

    def stamped(self, key: str, stamp: tuple[object, ...], measure: Callable[[], str]) -> str:
        """The digest of an object on shared storage whose server stamps every write (S3's ETag, a
        digest of the bytes, and LastModified): remembered under `key` while its stamp is `stamp`."""
        known = self._stamped.get(key)
        if known is not None and known[0] == stamp:
            self.reused += 1
            return known[1]
        self.hashed += 1
        digest = measure()
        self._stamped[key] = (stamp, digest)
        return digest

    def manifest(self, digest: str, path: Path | str) -> dict[str, str]:
        """relpath -> file digest of the stored directory named `digest`, whose manifest blob is
        at `path`. The parse of bytes that hash to `digest` is kept under `digest`: any bytes
        that hash to it are those bytes. ArtifactError if the blob no longer hashes to its name
        (changed since it was measured), ValueError or ArtifactError if it is not a manifest."""
        self._manifests_seen.add(digest)
        known = self._manifests.get(digest)
        if known is None:
            data, measured = read_measured(path)
            if measured != digest:
                raise ArtifactError(f"{path}: the manifest changed while it was read")
            known = self._manifests[digest] = dict(parse_manifest(data))
        return known

    def sweep(self) -> None:
        """Forget files not asked about since the last sweep (deleted or pruned ones)."""
        self._known = {k: v for k, v in self._known.items() if k in self._seen}
        self._seen = set()
        self._manifests = {k: v for k, v in self._manifests.items() if k in self._manifests_seen}
        self._manifests_seen = set()
