"""Reading and hashing stored bytes: measured reads and copies, file and directory digests,
and the manifest a directory digest is taken over.

Reading is measured, not trusted: `read_measured` and `copy_measured` hash the very bytes
they hand on (one descriptor, read once, never through a symbolic link), so a file
swapped between a check and a use is either the checked bytes or refused.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from pathlib import Path

from ..errors import ArtifactError

__all__ = [
    "HEX64",
    "copy_measured",
    "dir_digest",
    "file_digest",
    "manifest_bytes",
    "parse_manifest",
    "read_measured",
    "regular_files",
]

CHUNK = 1 << 22  # 4 MiB: large enough that the hash, not Python, bounds throughput
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _open_regular(path: Path | str) -> int:
    """A read descriptor on a regular file; a symbolic link at the last component is refused.

    Links inside the path are not the threat: whatever the descriptor reads is hashed,
    and the hash is what is compared. Refusing a final link keeps a planted link from
    reading as an ordinary (if mismatching) file in reports.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ArtifactError(f"{path}: a symbolic link where a stored file should be") from None
        raise ArtifactError(f"{path}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ArtifactError(f"{path}: not a regular file")
    return fd


def read_measured(path: Path | str) -> tuple[bytes, str]:
    """A file's bytes, read once through one descriptor, and the SHA-256 of exactly those bytes."""
    fd = _open_regular(path)
    with os.fdopen(fd, "rb", buffering=0) as fh:
        data = fh.readall()
    return data, hashlib.sha256(data).hexdigest()


def _copy_fd(src: Path, dest: Path) -> str:
    fd = _open_regular(src)
    h = hashlib.sha256()
    with os.fdopen(fd, "rb", buffering=0) as fin:
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o400)
        with os.fdopen(out, "wb", buffering=0) as fout:
            buf = bytearray(CHUNK)
            view = memoryview(buf)
            while n := fin.readinto(buf):
                h.update(view[:n])
                fout.write(view[:n])
    return h.hexdigest()


def copy_measured(src: Path | str, dest: Path | str) -> str:
    """Copy a file or directory to the new path `dest` in one pass; return the digest of what was written.

    The digest (a file's SHA-256, a directory's manifest digest) is taken over the bytes
    as they are copied, so a caller that compares it with the expected digest and then
    uses `dest` uses the bytes it measured. Links and special files are refused. Put
    `dest` in a private (0700) directory: the copy is only as private as its parent.
    """
    src, dest = Path(src), Path(dest)
    try:
        mode = src.lstat().st_mode
    except OSError as exc:
        raise ArtifactError(f"{src}: {exc.strerror}") from None
    if stat.S_ISLNK(mode):
        raise ArtifactError(f"{src}: a symbolic link where a stored artifact should be")
    if not stat.S_ISDIR(mode):
        return _copy_fd(src, dest)
    dest.mkdir(mode=0o700)
    entries = []
    for rel, path in regular_files(src):
        target = dest / rel
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        entries.append((rel, _copy_fd(path, target)))
    return hashlib.sha256(manifest_bytes(entries)).hexdigest()


def file_digest(path: Path | str) -> str:
    with open(path, "rb", buffering=0) as fh:
        first = fh.read(CHUNK)
        h = hashlib.sha256(first)
        if len(first) < CHUNK:  # most artifacts: one read, no buffer to allocate
            return h.hexdigest()
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        while n := fh.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def regular_files(root: Path) -> list[tuple[str, Path]]:
    """Regular files under root as (posix relpath, path), sorted; refuses links and specials."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            mode = full.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise ArtifactError(f"{full}: symbolic links cannot be stored")
            if name in filenames and not stat.S_ISREG(mode):
                raise ArtifactError(f"{full}: not a regular file")
        for name in filenames:
            full = Path(dirpath) / name
            out.append((full.relative_to(root).as_posix(), full))
    out.sort()
    return out


def manifest_bytes(entries: list[tuple[str, str]]) -> bytes:
    """The bytes a directory digest is taken over: sorted `relpath\\tsha256\\n` lines."""
    for rel, _ in entries:
        if "\t" in rel or "\n" in rel:
            raise ArtifactError(f"file name {rel!r} contains a tab or newline")
    return "".join(f"{rel}\t{d}\n" for rel, d in sorted(entries)).encode()


def dir_digest(path: Path | str) -> str:
    root = Path(path)
    if not root.is_dir():
        raise ArtifactError(f"{root}: not a directory")
    return hashlib.sha256(manifest_bytes([(rel, file_digest(p)) for rel, p in regular_files(root)])).hexdigest()


def parse_manifest(data: bytes) -> list[tuple[str, str]]:
    entries = []
    for line in data.decode().splitlines():
        rel, _, d = line.partition("\t")
        if not HEX64.match(d):
            raise ArtifactError(f"bad manifest line {line!r}")
        entries.append((rel, d))
    return entries
