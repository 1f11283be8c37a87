"""Layer 2: the content-addressed artifact store and provenance queries."""

from ._provenance import ProvenanceNode, provenance
from ._store import ArtifactIssue, ArtifactStore, dir_digest, file_digest, manifest_bytes

__all__ = [
    "ArtifactIssue",
    "ArtifactStore",
    "ProvenanceNode",
    "dir_digest",
    "file_digest",
    "manifest_bytes",
    "provenance",
]
