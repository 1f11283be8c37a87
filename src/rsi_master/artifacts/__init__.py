"""Layer 2: the content-addressed artifact store and provenance queries."""

from ._provenance import ProvenanceNode, provenance
from ._store import (
    ArtifactIssue,
    ArtifactMismatch,
    ArtifactStore,
    copy_measured,
    dir_digest,
    file_digest,
    manifest_bytes,
    read_measured,
)

__all__ = [
    "ArtifactIssue",
    "ArtifactMismatch",
    "ArtifactStore",
    "ProvenanceNode",
    "copy_measured",
    "dir_digest",
    "file_digest",
    "manifest_bytes",
    "provenance",
    "read_measured",
]
