"""One pass over an artifact store that re-hashes every stored byte: what does not match its
name, and every digest the store holds."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import ArtifactError
from ._digests import DigestCache

__all__ = ["ArtifactIssue", "StoreScan", "scan_store"]


@dataclass(frozen=True)
class ArtifactIssue:
    """A stored artifact that does not match its name."""

    digest: str
    what: str

    def __str__(self) -> str:
        return f"artifact {self.digest}: {self.what}"


@dataclass(frozen=True)
class StoreScan:
    """One pass over a store: what does not match its name, and every digest it holds."""

    issues: list[ArtifactIssue]
    digests: list[str]
    """As `ArtifactStore.digests` lists them (sorted), whatever their state."""


def scan_store(objects: Path, trees: Path, cache: DigestCache | None = None) -> StoreScan:
    """`ArtifactStore.verify`, and the digests `ArtifactStore.digests` lists, from the same
    pass over a store's `objects/` and `trees/`."""
    digests = cache if cache is not None else DigestCache()
    issues: list[ArtifactIssue] = []
    listed: list[str] = []
    blob_inodes: dict[tuple[int, int], str] = {}
    good: set[str] = set()
    if objects.is_dir():
        for sub in sorted(os.scandir(objects), key=_name):
            is_dir = sub.is_dir()
            if not is_dir or len(sub.name) != 2:
                issues.append(ArtifactIssue(sub.name, f"unexpected entry objects/{sub.name}"))
                if is_dir:  # still listed, as `digests` lists it
                    listed.extend(sub.name + f for f in sorted(os.listdir(sub.path)))
                continue
            for f in sorted(os.scandir(sub.path), key=_name):
                name = sub.name + f.name
                listed.append(name)
                st = f.stat(follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode):
                    issues.append(ArtifactIssue(name, "not a regular file"))
                    continue
                try:
                    measured = digests.digest(f.path, st)
                except ArtifactError as exc:
                    issues.append(ArtifactIssue(name, f"unreadable: {exc}"))
                    continue
                if measured != name:
                    issues.append(ArtifactIssue(name, "content does not match its digest (file modified)"))
                    continue
                good.add(name)
                blob_inodes[(st.st_dev, st.st_ino)] = name
    if trees.is_dir():
        for tree in sorted(os.scandir(trees), key=_name):
            issues.extend(_verify_tree(objects, tree, good, blob_inodes, digests))
    digests.sweep()
    return StoreScan(issues, listed)


def _verify_tree(
    objects: Path, tree: os.DirEntry[str], good: set[str], inodes: dict[tuple[int, int], str], digests: DigestCache
) -> list[ArtifactIssue]:
    digest = tree.name
    if tree.is_symlink():
        return [ArtifactIssue(digest, "the stored directory was replaced by a symbolic link")]
    if digest not in good:
        return [ArtifactIssue(digest, "directory without a valid manifest in the store")]
    try:
        # Its blob hashed to `digest` just now: the manifest is the one those bytes hold.
        wanted = digests.manifest(digest, os.path.join(objects, digest[:2], digest[2:]))
        found = _tree_files(tree.path)
    except (ArtifactError, ValueError) as exc:
        return [ArtifactIssue(digest, f"unreadable directory: {exc}")]
    issues = []
    if found.keys() != wanted.keys():
        for rel in sorted(found.keys() - wanted.keys()):
            issues.append(ArtifactIssue(digest, f"file {rel} was added to the stored directory"))
        for rel in sorted(wanted.keys() - found.keys()):
            issues.append(ArtifactIssue(digest, f"file {rel} was removed from the stored directory"))
    for rel in sorted(wanted.keys() & found.keys()):
        path, st = found[rel]
        # A hard link to a blob that was just measured needs no second read.
        actual = inodes.get((st.st_dev, st.st_ino))
        if actual is None:
            try:
                actual = digests.digest(path, st)
            except ArtifactError as exc:
                issues.append(ArtifactIssue(digest, f"file {rel} is unreadable: {exc}"))
                continue
        if actual != wanted[rel]:
            issues.append(ArtifactIssue(digest, f"file {rel} does not match the manifest (modified)"))
    return issues


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _tree_files(root: Path | str) -> dict[str, tuple[str, os.stat_result]]:
    """Regular files under a stored directory, posix relpath -> (path, lstat); like
    `regular_files`, refuses links and special files (ArtifactError)."""
    out: dict[str, tuple[str, os.stat_result]] = {}
    pending = [("", str(root))]
    while pending:
        rel, path = pending.pop()
        try:
            with os.scandir(path) as it:
                entries = list(it)
            for e in entries:
                st = e.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    raise ArtifactError(f"{e.path}: symbolic links cannot be stored")
                if stat.S_ISDIR(st.st_mode):
                    pending.append((f"{rel}{e.name}/", e.path))
                elif stat.S_ISREG(st.st_mode):
                    out[rel + e.name] = (e.path, st)
                else:
                    raise ArtifactError(f"{e.path}: not a regular file")
        except OSError as exc:
            raise ArtifactError(f"{path}: {exc.strerror}") from None
    return out
