"""Content-addressed artifact store.

Files are named by the SHA-256 of their bytes; a directory by the SHA-256 of its manifest
(sorted `relpath<TAB>sha256` lines). Every write goes to a temporary file that is fsynced
and atomically renamed into place, so a crash leaves either the whole object or nothing.
Stored objects are read-only and identical content is stored once: a directory is
materialised under `trees/` as hard links to its files' blobs, so a checkpoint directory
can be handed to `from_pretrained` as it is.

Reading is measured, not trusted (`_measure`): `read_bytes` hashes the very bytes it hands
on and refuses them unless they hash to the name they were asked for.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from .. import _durable
from ..errors import ArtifactError
from ._digests import DigestCache
from ._measure import CHUNK, HEX64, manifest_bytes, parse_manifest, read_measured, regular_files
from ._scan import ArtifactIssue, StoreScan, scan_store
from ._tree import FILE_MODE, force_remove, fsync_dir, hash_and_sync, materialise

__all__ = ["ArtifactIssue", "ArtifactMismatch", "ArtifactStore", "StoreScan"]


class ArtifactMismatch(ArtifactError):
    """Stored bytes that do not hash to their name: changed after they were stored."""

    def __init__(self, digest: str, measured: str) -> None:
        super().__init__(f"artifact {digest}: the stored bytes hash to {measured} (changed on disk)")
        self.digest = digest
        self.measured = measured


class ArtifactStore:
    """`objects/ab/cdef…` blobs, `trees/<digest>/` materialised directories."""

    def __init__(self, root: Path | str, *, create: bool = True) -> None:
        self.root = Path(root).absolute()  # paths handed to child processes must not depend on their cwd
        self._objects = self.root / "objects"
        self._trees = self.root / "trees"
        self._tmp = self.root / "tmp"
        # A pruned directory keeps its manifest blob (the digest the ledger names still
        # resolves to what it was) and a marker here; its tree and unshared blobs are gone.
        self._pruned = self.root / "pruned"
        if create:
            for d in (self._objects, self._trees, self._tmp):
                d.mkdir(parents=True, exist_ok=True)
        elif not self._objects.is_dir():
            raise ArtifactError(f"{self.root}: not an artifact store")

    # -- naming ------------------------------------------------------------------------
    @staticmethod
    def _check(digest: str) -> str:
        if not isinstance(digest, str) or not HEX64.match(digest):
            raise ArtifactError(f"not an artifact digest: {digest!r}")
        return digest

    def _blob(self, digest: str) -> Path:
        return self._objects / digest[:2] / digest[2:]

    def blob(self, digest: str) -> Path:
        """Where the blob named `digest` is (a directory's: its manifest), whether or not it is there."""
        return self._blob(self._check(digest))

    def mark_pruned(self, digest: str) -> None:
        """Record `digest` as a directory the keep policy pruned (for a copy of a store that was)."""
        self._pruned.mkdir(exist_ok=True)
        (self._pruned / self._check(digest)).write_bytes(b"")

    def has(self, digest: str) -> bool:
        return self._blob(self._check(digest)).is_file()

    def kind(self, digest: str) -> Literal["file", "dir"]:
        if not self.has(digest):
            raise ArtifactError(f"artifact {digest} is not in the store")
        if (self._trees / digest).is_dir():
            return "dir"
        if self.is_pruned(digest):
            raise ArtifactError(f"artifact {digest} was pruned by the run's keep policy (only its manifest is kept)")
        return "file"

    def is_pruned(self, digest: str) -> bool:
        return (self._pruned / self._check(digest)).is_file()

    def pruned(self) -> list[str]:
        """Directories pruned from this store (their manifests remain)."""
        if not self._pruned.is_dir():
            return []
        return sorted(p.name for p in self._pruned.iterdir() if HEX64.match(p.name))

    def prune_dirs(self, digests: list[str], keep: set[str] = frozenset()) -> int:  # type: ignore[assignment]
        """Remove stored directories' trees and every blob no other tree (nor `keep`) uses;
        their manifests stay, marked pruned. Returns the bytes freed."""
        doomed = [d for d in dict.fromkeys(digests) if (self._trees / self._check(d)).is_dir()]
        blobs = {b for d in doomed for _, b in self.manifest(d)}
        self._pruned.mkdir(exist_ok=True)
        for d in doomed:
            (self._pruned / d).write_bytes(b"")  # first: a crash in between leaves a marked, partial tree
            force_remove(self._trees / d)
        used = set(keep)
        for tree in self._trees.iterdir():
            if HEX64.match(tree.name) and self._blob(tree.name).is_file():
                used.update(b for _, b in parse_manifest(self._blob(tree.name).read_bytes()))
        freed = 0
        for b in sorted(blobs - used - set(doomed)):
            blob = self._blob(b)
            if blob.is_file():
                freed += blob.stat().st_size
                blob.unlink()
        fsync_dir(self._trees)
        return freed

    def path(self, digest: str) -> Path:
        """Read-only path of a stored file, or of a stored directory's materialised tree."""
        return self._trees / digest if self.kind(digest) == "dir" else self._blob(digest)

    def read_measured(self, digest: str) -> tuple[bytes, str]:
        """A stored file's bytes, read once, and the digest they actually have (which may differ)."""
        if self.kind(digest) != "file":
            raise ArtifactError(f"artifact {digest} is a directory")
        return read_measured(self._blob(digest))

    def read_bytes(self, digest: str) -> bytes:
        """A stored file's bytes, refused (`ArtifactMismatch`) unless they hash to its name."""
        data, measured = self.read_measured(digest)
        if measured != digest:
            raise ArtifactMismatch(digest, measured)
        return data

    # -- writing -----------------------------------------------------------------------
    def _commit_blob(self, tmp: Path, digest: str) -> None:
        target = self._blob(digest)
        if target.exists():  # identical content is stored once
            tmp.unlink()
            return
        target.parent.mkdir(exist_ok=True)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
        fsync_dir(target.parent)

    def put_bytes(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        if self.has(digest):
            return digest
        fd, name = tempfile.mkstemp(dir=self._tmp)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                _durable.fsync(fh.fileno())
            self._commit_blob(Path(name), digest)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
        return digest

    def put_file(self, path: Path | str, *, move: bool = False) -> str:
        """Store a file, hashing the very bytes that are stored.

        `move=True` hands the file over instead of copying it (for outputs a producer
        wrote for the store, such as checkpoint shards): it is renamed into the store's
        temporary area first, so later writes through the old path cannot reach it, then
        hashed, fsynced and renamed into place. No byte is copied, so storing runs at
        hashing speed; a copy is bounded by the disk's write bandwidth instead.
        """
        src = Path(path)
        if not src.is_file() or src.is_symlink():
            raise ArtifactError(f"{src}: no such file")
        if move:
            fd, name = tempfile.mkstemp(dir=self._tmp)
            os.close(fd)
            try:
                os.replace(src, name)
            except OSError:  # another filesystem: copy instead
                Path(name).unlink(missing_ok=True)
            else:
                try:
                    digest = hash_and_sync(Path(name))
                    self._commit_blob(Path(name), digest)
                except BaseException:
                    Path(name).unlink(missing_ok=True)
                    raise
                return digest
        h = hashlib.sha256()
        fd, name = tempfile.mkstemp(dir=self._tmp)
        try:
            with open(src, "rb") as fin, os.fdopen(fd, "wb") as fout:
                buf = bytearray(CHUNK)
                view = memoryview(buf)
                while n := fin.readinto(buf):
                    h.update(view[:n])
                    fout.write(view[:n])
                fout.flush()
                _durable.fsync(fout.fileno())
            digest = h.hexdigest()
            self._commit_blob(Path(name), digest)
        except OSError as exc:
            Path(name).unlink(missing_ok=True)
            raise ArtifactError(f"{src}: {exc.strerror}") from None
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
        return digest

    def put_dir(self, path: Path | str, *, move: bool = False) -> str:
        """Store every file, then the manifest, then materialise the tree.

        With `move=True` the files are handed over (see `put_file`) and the emptied
        source directories are removed.
        """
        src = Path(path)
        if not src.is_dir():
            raise ArtifactError(f"{src}: no such directory")
        entries = [(rel, self.put_file(p, move=move)) for rel, p in regular_files(src)]
        if move:
            for dirpath, _, _ in sorted(os.walk(src), key=lambda w: -len(w[0])):
                with contextlib.suppress(OSError):  # not empty: a file copied from another filesystem stays
                    os.rmdir(dirpath)
        manifest = manifest_bytes(entries)
        digest = self.put_bytes(manifest)
        tree = self._trees / digest
        if tree.is_dir():
            return digest
        materialise(tree, self._tmp, entries, self._blob)
        return digest

    def materialise(self, digest: str) -> Path:
        """The tree of a stored directory whose manifest and files are all stored here, built if absent
        (for a store filled blob by blob, as a node's cache of a shared store is)."""
        tree = self._trees / self._check(digest)
        if not tree.is_dir():
            data, measured = read_measured(self._blob(digest))
            if measured != digest:
                raise ArtifactMismatch(digest, measured)
            materialise(tree, self._tmp, parse_manifest(data), self._blob)
        return tree

    def put(self, path: Path | str, *, move: bool = False) -> str:
        p = Path(path)
        if p.is_dir():
            return self.put_dir(p, move=move)
        return self.put_file(p, move=move)

    def manifest(self, digest: str) -> list[tuple[str, str]]:
        """(relpath, file digest) entries of a stored directory."""
        if self.kind(digest) != "dir":
            raise ArtifactError(f"artifact {digest} is not a directory")
        return parse_manifest(self._blob(digest).read_bytes())

    # -- listing and verification -------------------------------------------------------
    def digests(self) -> Iterator[str]:
        if not self._objects.is_dir():
            return
        for sub in sorted(os.listdir(self._objects)):
            if os.path.isdir(self._objects / sub):
                for f in sorted(os.listdir(self._objects / sub)):
                    yield sub + f

    def verify(self, cache: DigestCache | None = None) -> list[ArtifactIssue]:
        """Re-hash every stored byte; never trusts size or mtime. With a `cache` kept across
        calls in one process, a file whose ctime-guarded stat signature is the one it was
        measured under is not read again (see `_digests`)."""
        return self.scan(cache).issues

    def scan(self, cache: DigestCache | None = None) -> StoreScan:
        """`verify`, and the digests `digests()` lists, from the same pass over the store."""
        return scan_store(self._objects, self._trees, cache)
