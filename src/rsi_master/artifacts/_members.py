"""Stored directories whose members are gone while their manifest stays.

A scan of the store checks what is there: each blob against its name, each materialised tree
against its manifest. A directory removed whole (its tree and its blobs), with its manifest
blob left behind, leaves nothing for that scan to find, and the digest the ledger names still
resolves. `missing_members` looks from the other side: every directory the caller knows of
(the ledger's references) must have its tree, or a pruning marker (checked against the
recorded prunes elsewhere), and every tree its member blobs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from ..errors import ArtifactError
from ._backed import RunStore, SharedArtifactStore
from ._digests import DigestCache
from ._measure import HEX64
from ._store import ArtifactIssue

__all__ = ["missing_members"]

# The first line of a manifest: `relpath<TAB>sha256`. A stored file that is not one (JSON,
# JSONL, a weight file) fails on its first bytes, so no file is read whole to tell.
_FIRST_LINE = re.compile(rb"[^\t\n]+\t[0-9a-f]{64}(\n|$)")
_SNIFF = 4096


def _looks_like_manifest(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF)
    except OSError:
        return False
    return _FIRST_LINE.match(head) is not None


def missing_members(store: RunStore, known: Iterable[str], cache: DigestCache | None = None) -> list[ArtifactIssue]:
    """Directories among `known` (digests) whose tree is gone without a pruning marker, and
    trees in the store whose member blobs are gone; each named with what is missing."""
    if isinstance(store, SharedArtifactStore):
        return store.missing_members(known, cache)
    cache = cache if cache is not None else DigestCache()
    objects, trees = store.root / "objects", store.root / "trees"
    issues: list[ArtifactIssue] = []

    def blob(d: str) -> str:
        return os.path.join(objects, d[:2], d[2:])

    def gone(entries: dict[str, str]) -> list[str]:
        return sorted(rel for rel, d in entries.items() if not os.path.isfile(blob(d)))

    for digest in sorted(set(known)):
        if not HEX64.match(digest) or os.path.lexists(trees / digest) or store.is_pruned(digest):
            continue
        path = blob(digest)
        if not os.path.isfile(path) or not _looks_like_manifest(path):
            continue  # a missing blob is named by the caller; a file artifact has no members
        try:
            entries = cache.manifest(digest, path)
        except (ArtifactError, ValueError, UnicodeDecodeError):
            continue  # bytes that no longer hash to their name are named by the scan
        lost = gone(entries)
        detail = f"; {len(lost)} of its {len(entries)} files are missing too (first: {lost[0]})" if lost else ""
        issues.append(
            ArtifactIssue(digest, f"stored directory missing: its tree is gone, only its manifest remains{detail}")
        )
    if trees.is_dir():
        for tree in sorted(os.scandir(trees), key=lambda e: e.name):
            if not HEX64.match(tree.name) or tree.is_symlink() or not os.path.isfile(blob(tree.name)):
                continue  # named by the scan
            try:
                entries = cache.manifest(tree.name, blob(tree.name))
            except (ArtifactError, ValueError, UnicodeDecodeError):
                continue
            for rel in gone(entries):
                issues.append(ArtifactIssue(tree.name, f"file {rel} is missing from the store's objects"))
    return issues
