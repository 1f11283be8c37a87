"""A run's artifact store on shared storage: every artifact in a `SharedStore` (an fsspec URL,
S3-compatible or a shared path), and on each machine a local `ArtifactStore` as its cache.

The shared store is the store: `has`, `kind`, `digests`, `verify` and pruning read it. The cache
holds what this machine wrote or read, so `path` hands a training or evaluation process a local
file, or a stored directory as a tree of hard links, as a local run does. A write goes through
the cache (hashing the very bytes stored) and is uploaded by its digest; a directory's files go
up before its tree marker and the marker before its manifest, so a directory whose manifest is
on the shared store has every file there, and an upload cut short names no artifact. A read
fetches into the cache, hashed as written and refused unless it hashes to the digest asked for.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

from ..errors import ArtifactError
from ._digests import DigestCache
from ._measure import HEX64, parse_manifest, read_measured
from ._scan import ArtifactIssue, StoreScan
from ._shared import SharedStore
from ._store import ArtifactMismatch, ArtifactStore

__all__ = ["RunStore", "SharedArtifactStore"]

_TREES, _PRUNED = "trees", "pruned"
# The first line of a manifest (see `_members`): a file artifact fails on its first bytes.
_FIRST_LINE = re.compile(rb"[^\t\n]+\t[0-9a-f]{64}(\n|$)")
_SNIFF = 4096


def fetch(shared: SharedStore, cache: ArtifactStore, digest: str) -> None:
    """Blob `digest` into the local store `cache` unless it is there, streamed and measured."""
    if cache.blob(digest).is_file():
        return
    part = cache.root / "tmp" / f"fetch-{uuid.uuid4().hex}"
    try:
        shared.get_file(digest, part)  # refused unless it hashes to `digest`
        got = cache.put_file(part, move=True)
    finally:
        part.unlink(missing_ok=True)
    if got != digest:  # changed under the cache's hand between the two hashes
        raise ArtifactMismatch(digest, got)


class SharedArtifactStore:
    """The run's store at `url`, cached on this machine under `cache` (the run directory's `artifacts/`)."""

    def __init__(self, url: str, cache: Path | str) -> None:
        self.shared = SharedStore(url)
        self.cache = ArtifactStore(cache)
        self.url = url
        # Blobs found not to be manifests, for a `missing_members` without a verifier's cache.
        self._not_manifests: set[str] = set()
        # What this process saw on the shared store. A blob is removed only by pruning, which keeps
        # every blob the ledger names by itself, so a digest seen is there while this process runs
        # (its own pruning forgets what it removed), and a file stays a file; a directory is asked
        # about each time, since another machine's pruning may have removed its files.
        self._files: set[str] = set()
        self._present: set[str] = set()

    @property
    def root(self) -> Path:
        """This machine's cache (a local store)."""
        return self.cache.root

    # -- naming ------------------------------------------------------------------------
    def has(self, digest: str) -> bool:
        if digest in self._present:
            return True
        if not self.shared.has(digest):
            return False
        self._present.add(digest)
        return True

    def kind(self, digest: str) -> Literal["file", "dir"]:
        if digest in self._files:
            return "file"
        if not self.has(digest):
            raise ArtifactError(f"artifact {digest} is not in the store")
        if self.shared.marked(_TREES, digest):
            return "dir"
        if self.is_pruned(digest):
            raise ArtifactError(f"artifact {digest} was pruned by the run's keep policy (only its manifest is kept)")
        self._files.add(digest)
        return "file"

    def is_pruned(self, digest: str) -> bool:
        return self.shared.marked(_PRUNED, digest)

    def pruned(self) -> list[str]:
        return self.shared.markers(_PRUNED)

    def digests(self) -> Iterator[str]:
        return self.shared.digests()

    # -- reading: through this machine's cache ---------------------------------------------
    def _fetch(self, digest: str) -> None:
        fetch(self.shared, self.cache, digest)

    def path(self, digest: str) -> Path:
        """A local read-only path of a stored file, or of a stored directory's tree, fetched if absent."""
        if self.kind(digest) == "file":
            self._fetch(digest)
            return self.cache.blob(digest)
        for _, member in self.manifest(digest):
            self._fetch(member)
        return self.cache.materialise(digest)

    def read_measured(self, digest: str) -> tuple[bytes, str]:
        if self.kind(digest) != "file":
            raise ArtifactError(f"artifact {digest} is a directory")
        self._fetch(digest)
        return self.cache.read_measured(digest)

    def read_bytes(self, digest: str) -> bytes:
        data, measured = self.read_measured(digest)
        if measured != digest:
            raise ArtifactMismatch(digest, measured)
        return data

    def manifest(self, digest: str) -> list[tuple[str, str]]:
        if self.kind(digest) != "dir":
            raise ArtifactError(f"artifact {digest} is not a directory")
        return self._manifest_at(digest)

    # -- writing: through the cache, then up by digest ---------------------------------------
    def _upload(self, digest: str) -> None:
        if self.has(digest):
            return
        got = self.shared.put_file(self.cache.blob(digest))
        if got != digest:
            raise ArtifactMismatch(digest, got)
        self._present.add(digest)

    def put_bytes(self, data: bytes) -> str:
        digest = self.cache.put_bytes(data)
        self._upload(digest)
        return digest

    def put_file(self, path: Path | str, *, move: bool = False) -> str:
        digest = self.cache.put_file(path, move=move)
        self._upload(digest)
        return digest

    def put_dir(self, path: Path | str, *, move: bool = False) -> str:
        digest = self.cache.put_dir(path, move=move)
        if self.has(digest) and self.shared.marked(_TREES, digest):
            return digest
        for _, member in self._manifest_at(digest):
            self._upload(member)
        self.shared.mark(_TREES, digest)
        self._upload(digest)
        self._files.discard(digest)
        return digest

    def put(self, path: Path | str, *, move: bool = False) -> str:
        return self.put_dir(path, move=move) if Path(path).is_dir() else self.put_file(path, move=move)

    def prune_dirs(self, digests: list[str], keep: set[str] = frozenset()) -> int:  # type: ignore[assignment]
        """As `ArtifactStore.prune_dirs`, on the shared store (and this machine's cache). Returns
        the shared store's bytes freed."""
        doomed = [d for d in dict.fromkeys(digests) if self.shared.marked(_TREES, d)]
        blobs = {b for d in doomed for _, b in self.manifest(d)}
        for d in doomed:
            self.shared.mark(_PRUNED, d)  # first: a crash in between leaves a marked, partial directory
            self.shared.unmark(_TREES, d)
        used = set(keep)
        for tree in self.shared.markers(_TREES):
            if self.shared.has(tree):
                used.update(b for _, b in self.manifest(tree))
        freed = 0
        for b in sorted(blobs - used - set(doomed)):
            if self.shared.has(b):
                freed += self.shared.size(b)
                self.shared.remove(b)
                self._present.discard(b)
                self._files.discard(b)
        self.cache.prune_dirs(doomed, keep=used)
        return freed

    # -- verification ------------------------------------------------------------------
    def verify(self, cache: DigestCache | None = None) -> list[ArtifactIssue]:
        return self.scan(cache).issues

    def scan(self, cache: DigestCache | None = None) -> StoreScan:
        """Every shared blob re-hashed (streamed), every directory's files checked, and this
        machine's cache scanned as a local store (what `path` hands on is read from it)."""
        issues: list[ArtifactIssue] = []
        objects = self.shared.objects()
        listed = list(objects)
        good: set[str] = set()
        for name, stamp in objects.items():
            if not HEX64.match(name):
                issues.append(ArtifactIssue(name, f"unexpected entry objects/{name[:2]}/{name[2:]}"))
                continue
            try:
                measured = self._measure(name, stamp, cache)
            except ArtifactError as exc:
                issues.append(ArtifactIssue(name, f"unreadable: {exc}"))
                continue
            if measured != name:
                issues.append(ArtifactIssue(name, "content does not match its digest (file modified)"))
            else:
                good.add(name)
        present = set(listed)
        for tree in self.shared.markers(_TREES):
            if tree not in present:
                continue  # an upload that stopped before its manifest: not an artifact
            if tree not in good:
                issues.append(ArtifactIssue(tree, "directory without a valid manifest in the store"))
                continue
            for rel, member in self._manifest_at(tree):
                if member in present and member not in good:
                    issues.append(ArtifactIssue(tree, f"file {rel} does not match the manifest (modified)"))
        for issue in self.cache.scan(cache).issues:
            issues.append(ArtifactIssue(issue.digest, f"in this machine's cache {self.cache.root}: {issue.what}"))
        return StoreScan(issues, listed)

    def _measure(self, name: str, stamp: tuple[object, ...] | None, cache: DigestCache | None) -> str:
        """A blob's SHA-256, read in full unless `cache` (a verifier's, kept across its calls)
        measured it under the same local stat signature (a shared path: see `_digests`) or the same
        server stamp (S3's size, ETag and LastModified, which every write of the object replaces)."""
        if cache is None:
            return self.shared.measure(name)
        if self.shared.local:
            path = self.shared.path(name)
            try:
                return cache.digest(path, os.lstat(path))
            except OSError as exc:
                raise ArtifactError(f"{path}: {exc.strerror}") from None
        if stamp is None:
            return self.shared.measure(name)
        return cache.stamped(f"{self.url}/{name}", stamp, lambda: self.shared.measure(name))

    def _manifest_at(self, digest: str) -> list[tuple[str, str]]:
        """The entries of the manifest blob `digest`, fetched into the cache (refused unless it hashes to its name)."""
        self._fetch(digest)
        data, measured = read_measured(self.cache.blob(digest))
        if measured != digest:
            raise ArtifactMismatch(digest, measured)
        return parse_manifest(data)

    def _looks_like_manifest(self, digest: str, not_manifests: set[str]) -> bool:
        if digest in not_manifests:
            return False
        if _FIRST_LINE.match(self.shared.head(digest, _SNIFF)) is None:
            not_manifests.add(digest)
            return False
        return True

    def missing_members(self, known: Iterable[str], cache: DigestCache | None = None) -> list[ArtifactIssue]:
        """`artifacts.missing_members` on the shared store: directories among `known` whose tree
        marker is gone without a pruning marker, and directories whose files are gone."""
        present = set(self.shared.digests())
        trees, pruned = set(self.shared.markers(_TREES)), set(self.shared.markers(_PRUNED))
        issues: list[ArtifactIssue] = []
        not_manifests = cache.not_manifests if cache is not None else self._not_manifests

        def gone(entries: list[tuple[str, str]]) -> list[str]:
            return sorted(rel for rel, d in entries if d not in present)

        for digest in sorted(set(known)):
            if not HEX64.match(digest) or digest in trees or digest in pruned or digest not in present:
                continue
            try:
                if not self._looks_like_manifest(digest, not_manifests):
                    continue
                entries = self._manifest_at(digest)
            except (ArtifactError, OSError, ValueError, UnicodeDecodeError):
                continue  # bytes that no longer hash to their name are named by the scan
            lost = gone(entries)
            detail = f"; {len(lost)} of its {len(entries)} files are missing too (first: {lost[0]})" if lost else ""
            issues.append(
                ArtifactIssue(digest, f"stored directory missing: its tree is gone, only its manifest remains{detail}")
            )
        for tree in sorted(trees & present):
            try:
                entries = self._manifest_at(tree)
            except (ArtifactError, ValueError, UnicodeDecodeError):
                continue
            for rel in gone(entries):
                issues.append(ArtifactIssue(tree, f"file {rel} is missing from the store's objects"))
        return issues

    def copy_to(self, dest: ArtifactStore) -> None:
        """Every artifact into the local store `dest` (a run exported to stand on its own)."""
        for digest in self.shared.digests():
            if HEX64.match(digest):
                fetch(self.shared, dest, digest)
        for tree in self.shared.markers(_TREES):
            if dest.blob(tree).is_file():
                dest.materialise(tree)
        for digest in self.shared.markers(_PRUNED):
            dest.mark_pruned(digest)


RunStore = ArtifactStore | SharedArtifactStore
"""A run's artifact store: a local directory (the default) or shared storage with a local cache."""
