"""Layer 2: the content-addressed artifact store and provenance queries."""

from ._backed import RunStore, SharedArtifactStore
from ._digests import DigestCache
from ._measure import (
    copy_measured,
    dir_digest,
    file_digest,
    manifest_bytes,
    read_measured,
)
from ._members import missing_members
from ._provenance import ProvenanceNode, provenance
from ._shared import SharedStore, check_url
from ._store import ArtifactIssue, ArtifactMismatch, ArtifactStore

__all__ = [
    "ArtifactIssue",
    "ArtifactMismatch",
    "ArtifactStore",
    "DigestCache",
    "ProvenanceNode",
    "RunStore",
    "SharedArtifactStore",
    "SharedStore",
    "check_url",
    "copy_measured",
    "dir_digest",
    "file_digest",
    "manifest_bytes",
    "missing_members",
    "provenance",
    "read_measured",
]
