"""Blobs on shared storage through fsspec: a shared filesystem path or an S3-compatible URL.

Named like the local store (`objects/ab/cdef…`, the SHA-256 of the bytes). Bytes move in
fixed-size chunks, so a multi-GB checkpoint never sits in memory. An upload goes to `tmp/` and
is moved under its digest only once every byte was written and hashed, so a partial upload is
never taken for an artifact; a download is hashed as it is written and refused unless it hashes
to the digest asked for, so what a node on another machine reads is measured, not trusted.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path
from typing import Any

from ..errors import ArtifactError
from ._measure import CHUNK, HEX64

__all__ = ["SharedStore"]


def _fsspec() -> Any:
    try:
        import fsspec
    except ImportError:
        raise ArtifactError("artifacts on shared storage need fsspec: pip install 'rsi-master[scale]'") from None
    return fsspec


class SharedStore:
    """Content-addressed blobs under an fsspec URL (`file:///shared/store`, `s3://bucket/store`, `memory://s`)."""

    def __init__(self, url: str) -> None:
        fs, root = _fsspec().core.url_to_fs(url)
        self.fs = fs
        self.root = root.rstrip("/")
        self.url = url

    def _blob(self, digest: str) -> str:
        if not isinstance(digest, str) or not HEX64.match(digest):
            raise ArtifactError(f"not an artifact digest: {digest!r}")
        return f"{self.root}/objects/{digest[:2]}/{digest[2:]}"

    def has(self, digest: str) -> bool:
        return bool(self.fs.exists(self._blob(digest)))

    def put_file(self, path: Path | str) -> str:
        """Upload a local file by its measured digest (nothing is written under `objects/` unless all of it was)."""
        tmp = f"{self.root}/tmp/{uuid.uuid4().hex}"
        self.fs.makedirs(f"{self.root}/tmp", exist_ok=True)
        h = hashlib.sha256()
        try:
            with open(path, "rb") as src, self.fs.open(tmp, "wb") as dst:
                while chunk := src.read(CHUNK):
                    h.update(chunk)
                    dst.write(chunk)
            digest = h.hexdigest()
            final = self._blob(digest)
            if self.fs.exists(final):
                self.fs.rm(tmp)
            else:
                self.fs.makedirs(final.rsplit("/", 1)[0], exist_ok=True)
                self.fs.mv(tmp, final)
        except BaseException:
            if self.fs.exists(tmp):
                self.fs.rm(tmp)
            raise
        return digest

    def get_file(self, digest: str, dest: Path | str) -> Path:
        """Download a blob to `dest`, hashed as it is written; refused (nothing at `dest`) unless it hashes to `digest`."""
        src = self._blob(digest)
        if not self.fs.exists(src):
            raise ArtifactError(f"artifact {digest} is not in the shared store {self.url}")
        dest = Path(dest)
        part = dest.with_name(f".{dest.name}.part-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        h = hashlib.sha256()
        try:
            with self.fs.open(src, "rb") as fh, open(part, "wb") as out:
                while chunk := fh.read(CHUNK):
                    h.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            if h.hexdigest() != digest:
                raise ArtifactError(f"artifact {digest}: the shared store's bytes hash to {h.hexdigest()}")
            os.replace(part, dest)
        finally:
            part.unlink(missing_ok=True)
        return dest
