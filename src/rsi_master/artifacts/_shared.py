"""Blobs on shared storage through fsspec: a shared filesystem path or an S3-compatible URL.

Named like the local store (`objects/ab/cdef…`, the SHA-256 of the bytes). Bytes move in
fixed-size chunks, so a multi-GB checkpoint never sits in memory. An upload goes to `tmp/` and
is moved under its digest only once every byte was written and hashed, so a partial upload is
never taken for an artifact; a download is hashed as it is written and refused unless it hashes
to the digest asked for, so what a node on another machine reads is measured, not trusted.

Beside the blobs, empty marker objects: `trees/<digest>` says the directory whose manifest is
blob `<digest>` has every file stored (written after its files and before its manifest, so a
manifest that is there always has its files), `pruned/<digest>` that the run's keep policy
removed that directory's files.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ArtifactError
from ._measure import CHUNK, HEX64

__all__ = ["SharedStore", "check_url"]

# Bytes buffered per open file for writing: s3fs's default is 50 MiB, and S3 refuses parts under
# 5 MiB. Reads ask for one chunk at a time with no read-ahead cache, so memory stays a few chunks.
_BLOCK = 2 * CHUNK
_READ = {"block_size": CHUNK, "cache_type": "none"}


def _fsspec() -> Any:
    try:
        import fsspec
    except ImportError:
        raise ArtifactError("artifacts on shared storage need fsspec: pip install 'rsi-master[scale]'") from None
    return fsspec


def check_url(url: str) -> str:
    """`url` as the run records it (a local path made an absolute `file://` URL), or a one-line
    ArtifactError: no scheme or path, a protocol fsspec does not know, or a missing backend."""
    if not isinstance(url, str) or not url.strip():
        raise ArtifactError("--artifacts: an fsspec URL (s3://BUCKET/PREFIX, file:///shared/store) or a path")
    if "://" not in url:
        url = Path(url).absolute().as_uri()
    protocol = url.split("://", 1)[0]
    fsspec = _fsspec()
    try:
        fsspec.get_filesystem_class(protocol)
    except ValueError:
        raise ArtifactError(f"--artifacts {url!r}: fsspec knows no protocol {protocol!r}") from None
    except ImportError as exc:
        raise ArtifactError(f"--artifacts {url!r}: the {protocol}:// backend is not installed ({exc})") from None
    return url.rstrip("/")


class SharedStore:
    """Content-addressed blobs under an fsspec URL (`file:///shared/store`, `s3://bucket/store`, `memory://s`)."""

    def __init__(self, url: str) -> None:
        # Another machine writes here too: a cached listing would hide its objects.
        try:
            fs, root = _fsspec().core.url_to_fs(url, use_listings_cache=False)
        except (ImportError, ValueError) as exc:
            raise ArtifactError(f"artifact store {url!r}: {exc}") from None
        self.fs = fs
        self.root = root.rstrip("/")
        self.url = url

    def probe(self) -> None:
        """Write and remove a temporary object, or raise a one-line ArtifactError (no such bucket,
        no permission, nobody listening): a run is not started on a store it cannot write."""
        tmp = f"{self.root}/tmp/probe-{uuid.uuid4().hex}"
        try:
            self.fs.makedirs(f"{self.root}/tmp", exist_ok=True)
            self.fs.pipe_file(tmp, b"")
            self.fs.rm_file(tmp)
        except Exception as exc:  # each backend raises its own kinds (OSError, botocore's, aiohttp's)
            raise ArtifactError(
                f"artifact store {self.url}: cannot write there ({type(exc).__name__}: {exc})"
            ) from None

    def _blob(self, digest: str) -> str:
        return f"{self.root}/objects/{_check(digest)[:2]}/{digest[2:]}"

    def _marker(self, kind: str, digest: str) -> str:
        return f"{self.root}/{kind}/{_check(digest)}"

    def has(self, digest: str) -> bool:
        return bool(self.fs.exists(self._blob(digest)))

    def head(self, digest: str, n: int) -> bytes:
        """The first `n` bytes of a blob (unmeasured: to tell a manifest from a file)."""
        with self.fs.open(self._blob(digest), "rb", **_READ) as fh:
            return bytes(fh.read(n))

    def size(self, digest: str) -> int:
        return int(self.fs.size(self._blob(digest)))

    # -- markers ----------------------------------------------------------------------
    def marked(self, kind: str, digest: str) -> bool:
        """Whether marker `kind` (`trees` or `pruned`) is set for `digest`."""
        return bool(self.fs.exists(self._marker(kind, digest)))

    def mark(self, kind: str, digest: str) -> None:
        self.fs.makedirs(f"{self.root}/{kind}", exist_ok=True)
        self.fs.pipe_file(self._marker(kind, digest), b"")

    def unmark(self, kind: str, digest: str) -> None:
        if self.marked(kind, digest):
            self.fs.rm_file(self._marker(kind, digest))

    def markers(self, kind: str) -> list[str]:
        """Digests with marker `kind`, sorted."""
        try:
            names = self.fs.ls(f"{self.root}/{kind}", detail=False)
        except FileNotFoundError:
            return []
        return sorted(n for n in (p.rsplit("/", 1)[-1] for p in names) if HEX64.match(n))

    # -- blobs ------------------------------------------------------------------------
    def digests(self) -> Iterator[str]:
        """Names under `objects/` as digests (whatever they hold), sorted."""
        return iter(self.objects())

    def objects(self) -> dict[str, tuple[object, ...] | None]:
        """Names under `objects/` as digests, sorted, each with what the server stamps on every
        write of it (S3: size, ETag, LastModified; None where there is no such stamp), from one listing."""
        base = f"{self.root}/objects/"
        try:
            found = self.fs.find(f"{self.root}/objects", detail=True)
        except FileNotFoundError:
            return {}
        out: dict[str, tuple[object, ...] | None] = {}
        for p in sorted(found):
            info = found[p]
            rel = p[p.index(base) + len(base) :] if base in p else p
            sub, _, name = rel.partition("/")
            etag = info.get("ETag")
            out[sub + name] = None if etag is None else (info.get("size"), etag, str(info.get("LastModified")))
        return out

    def path(self, digest: str) -> str:
        """The blob's path on its filesystem (a local path where `local`)."""
        return self._blob(digest)

    @property
    def local(self) -> bool:
        """Whether the store is a path on this machine's filesystems (`file://`, a mounted share)."""
        protocol = self.fs.protocol
        return "file" in (protocol if isinstance(protocol, tuple) else (protocol,))

    def measure(self, digest: str) -> str:
        """The SHA-256 of the stored blob's bytes, streamed (ArtifactError if unreadable)."""
        h = hashlib.sha256()
        try:
            with self.fs.open(self._blob(digest), "rb", **_READ) as fh:
                while chunk := fh.read(CHUNK):
                    h.update(chunk)
        except OSError as exc:
            raise ArtifactError(f"{self._blob(digest)}: {exc}") from None
        return h.hexdigest()

    def remove(self, digest: str) -> None:
        self.fs.rm_file(self._blob(digest))

    def put_file(self, path: Path | str) -> str:
        """Upload a local file by its measured digest (nothing is written under `objects/` unless all of it was)."""
        tmp = f"{self.root}/tmp/{uuid.uuid4().hex}"
        self.fs.makedirs(f"{self.root}/tmp", exist_ok=True)
        h = hashlib.sha256()
        try:
            with open(path, "rb") as src, self.fs.open(tmp, "wb", block_size=_BLOCK) as dst:
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
            with self.fs.open(src, "rb", **_READ) as fh, open(part, "wb") as out:
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


def _check(digest: str) -> str:
    if not isinstance(digest, str) or not HEX64.match(digest):
        raise ArtifactError(f"not an artifact digest: {digest!r}")
    return digest
