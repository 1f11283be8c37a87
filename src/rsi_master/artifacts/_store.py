"""Content-addressed artifact store.

Files are named by the SHA-256 of their bytes; a directory by the SHA-256 of its manifest
(sorted `relpath<TAB>sha256` lines). Every write goes to a temporary file that is fsynced
and atomically renamed into place, so a crash leaves either the whole object or nothing.
Stored objects are read-only and identical content is stored once: a directory is
materialised under `trees/` as hard links to its files' blobs, so a checkpoint directory
can be handed to `from_pretrained` as it is.

Reading is measured, not trusted: `read_bytes` and `copy_measured` hash the very bytes
they hand on (one descriptor, read once, never through a symbolic link), so a file
swapped between a check and a use is either the checked bytes or refused.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ArtifactError

__all__ = ["ArtifactIssue", "ArtifactMismatch", "ArtifactStore", "copy_measured", "dir_digest", "file_digest",
           "manifest_bytes", "read_measured"]

_CHUNK = 1 << 22  # 4 MiB: large enough that the hash, not Python, bounds throughput
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_FILE_MODE = 0o444
_DIR_MODE = 0o555


@dataclass(frozen=True)
class ArtifactIssue:
    """A stored artifact that does not match its name."""

    digest: str
    what: str

    def __str__(self) -> str:
        return f"artifact {self.digest}: {self.what}"


class ArtifactMismatch(ArtifactError):
    """Stored bytes that do not hash to their name: changed after they were stored."""

    def __init__(self, digest: str, measured: str) -> None:
        super().__init__(f"artifact {digest}: the stored bytes hash to {measured} (changed on disk)")
        self.digest = digest
        self.measured = measured


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
            buf = bytearray(_CHUNK)
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
    for rel, path in _walk(src):
        target = dest / rel
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        entries.append((rel, _copy_fd(path, target)))
    return hashlib.sha256(manifest_bytes(entries)).hexdigest()


def file_digest(path: Path | str) -> str:
    with open(path, "rb", buffering=0) as fh:
        first = fh.read(_CHUNK)
        h = hashlib.sha256(first)
        if len(first) < _CHUNK:  # most artifacts: one read, no buffer to allocate
            return h.hexdigest()
        buf = bytearray(_CHUNK)
        view = memoryview(buf)
        while n := fh.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def _walk(root: Path) -> list[tuple[str, Path]]:
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
    return hashlib.sha256(manifest_bytes([(rel, file_digest(p)) for rel, p in _walk(root)])).hexdigest()


def _hash_and_sync(path: Path) -> str:
    h = hashlib.sha256()
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    with open(path, "rb+", buffering=0) as fh:
        os.fsync(fh.fileno())  # start from durable bytes; usually a no-op for a flushed file
        while n := fh.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ArtifactStore:
    """`objects/ab/cdef…` blobs, `trees/<digest>/` materialised directories."""

    def __init__(self, root: Path | str, *, create: bool = True) -> None:
        self.root = Path(root).absolute()  # paths handed to child processes must not depend on their cwd
        self._objects = self.root / "objects"
        self._trees = self.root / "trees"
        self._tmp = self.root / "tmp"
        if create:
            for d in (self._objects, self._trees, self._tmp):
                d.mkdir(parents=True, exist_ok=True)
        elif not self._objects.is_dir():
            raise ArtifactError(f"{self.root}: not an artifact store")

    # -- naming ------------------------------------------------------------------------
    @staticmethod
    def _check(digest: str) -> str:
        if not isinstance(digest, str) or not _HEX64.match(digest):
            raise ArtifactError(f"not an artifact digest: {digest!r}")
        return digest

    def _blob(self, digest: str) -> Path:
        return self._objects / digest[:2] / digest[2:]

    def has(self, digest: str) -> bool:
        return self._blob(self._check(digest)).is_file()

    def kind(self, digest: str) -> Literal["file", "dir"]:
        if not self.has(digest):
            raise ArtifactError(f"artifact {digest} is not in the store")
        return "dir" if (self._trees / digest).is_dir() else "file"

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

    def read_json(self, digest: str) -> object:
        return json.loads(self.read_bytes(digest))

    # -- writing -----------------------------------------------------------------------
    def _commit_blob(self, tmp: Path, digest: str) -> None:
        target = self._blob(digest)
        if target.exists():  # identical content is stored once
            tmp.unlink()
            return
        target.parent.mkdir(exist_ok=True)
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, target)
        _fsync_dir(target.parent)

    def put_bytes(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        if self.has(digest):
            return digest
        fd, name = tempfile.mkstemp(dir=self._tmp)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            self._commit_blob(Path(name), digest)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
        return digest

    def put_json(self, obj: object) -> str:
        from ..ledger import canonical_bytes

        return self.put_bytes(canonical_bytes(obj))

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
                    digest = _hash_and_sync(Path(name))
                    self._commit_blob(Path(name), digest)
                except BaseException:
                    Path(name).unlink(missing_ok=True)
                    raise
                return digest
        h = hashlib.sha256()
        fd, name = tempfile.mkstemp(dir=self._tmp)
        try:
            with open(src, "rb") as fin, os.fdopen(fd, "wb") as fout:
                buf = bytearray(_CHUNK)
                view = memoryview(buf)
                while n := fin.readinto(buf):
                    h.update(view[:n])
                    fout.write(view[:n])
                fout.flush()
                os.fsync(fout.fileno())
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
        entries = [(rel, self.put_file(p, move=move)) for rel, p in _walk(src)]
        if move:
            for dirpath, _, _ in sorted(os.walk(src), key=lambda w: -len(w[0])):
                try:
                    os.rmdir(dirpath)
                except OSError:
                    pass
        manifest = manifest_bytes(entries)
        digest = self.put_bytes(manifest)
        tree = self._trees / digest
        if tree.is_dir():
            return digest
        staging = Path(tempfile.mkdtemp(dir=self._tmp))
        try:
            for rel, d in entries:
                dest = staging / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(self._blob(d), dest)
                except OSError:  # no hard links here: fall back to a copy
                    dest.write_bytes(self._blob(d).read_bytes())
                    os.chmod(dest, _FILE_MODE)
            for dirpath, _, _ in os.walk(staging, topdown=False):
                if dirpath != str(staging):
                    os.chmod(dirpath, _DIR_MODE)
            # The top directory is made read-only only once in place: moving a directory to
            # another parent rewrites its `..`, which needs write permission on it (root skips
            # that check, every other user does not).
            try:
                os.rename(staging, tree)
            except OSError:
                if not tree.is_dir():
                    raise
                _force_remove(staging)  # another writer materialised it first
            else:
                os.chmod(tree, _DIR_MODE)
            _fsync_dir(self._trees)
        except BaseException:
            if staging.exists():
                _force_remove(staging)
            raise
        return digest

    def put(self, path: Path | str, *, move: bool = False) -> str:
        p = Path(path)
        if p.is_dir():
            return self.put_dir(p, move=move)
        return self.put_file(p, move=move)

    def manifest(self, digest: str) -> list[tuple[str, str]]:
        """(relpath, file digest) entries of a stored directory."""
        if self.kind(digest) != "dir":
            raise ArtifactError(f"artifact {digest} is not a directory")
        return _parse_manifest(self._blob(digest).read_bytes())

    # -- listing and verification -------------------------------------------------------
    def digests(self) -> Iterator[str]:
        if not self._objects.is_dir():
            return
        for sub in sorted(self._objects.iterdir()):
            if sub.is_dir():
                for f in sorted(sub.iterdir()):
                    yield sub.name + f.name

    def verify(self) -> list[ArtifactIssue]:
        """Re-hash every stored byte; never trusts size or mtime."""
        issues: list[ArtifactIssue] = []
        blob_inodes: dict[tuple[int, int], str] = {}
        good: set[str] = set()
        if self._objects.is_dir():
            for sub in sorted(self._objects.iterdir(), key=lambda p: p.name):
                if not sub.is_dir() or len(sub.name) != 2:
                    issues.append(ArtifactIssue(sub.name, f"unexpected entry objects/{sub.name}"))
                    continue
                for f in sorted(sub.iterdir(), key=lambda p: p.name):
                    name = sub.name + f.name
                    if not f.is_file() or f.is_symlink():
                        issues.append(ArtifactIssue(name, "not a regular file"))
                        continue
                    if file_digest(f) != name:
                        issues.append(ArtifactIssue(name, "content does not match its digest (file modified)"))
                        continue
                    good.add(name)
                    st = f.stat()
                    blob_inodes[(st.st_dev, st.st_ino)] = name
        if self._trees.is_dir():
            for tree in sorted(self._trees.iterdir()):
                issues.extend(self._verify_tree(tree, good, blob_inodes))
        return issues

    def _verify_tree(self, tree: Path, good: set[str], inodes: dict[tuple[int, int], str]) -> list[ArtifactIssue]:
        digest = tree.name
        if tree.is_symlink():
            return [ArtifactIssue(digest, "the stored directory was replaced by a symbolic link")]
        if digest not in good:
            return [ArtifactIssue(digest, "directory without a valid manifest in the store")]
        try:
            wanted = dict(_parse_manifest(self._blob(digest).read_bytes()))
            found = dict(_walk(tree))
        except (ArtifactError, ValueError) as exc:
            return [ArtifactIssue(digest, f"unreadable directory: {exc}")]
        issues = []
        for rel in sorted(set(found) - set(wanted)):
            issues.append(ArtifactIssue(digest, f"file {rel} was added to the stored directory"))
        for rel in sorted(set(wanted) - set(found)):
            issues.append(ArtifactIssue(digest, f"file {rel} was removed from the stored directory"))
        for rel in sorted(set(wanted) & set(found)):
            st = found[rel].stat()
            same_blob = inodes.get((st.st_dev, st.st_ino))
            # A hard link to a blob that was just re-hashed needs no second read.
            actual = same_blob if same_blob is not None else file_digest(found[rel])
            if actual != wanted[rel]:
                issues.append(ArtifactIssue(digest, f"file {rel} does not match the manifest (modified)"))
        return issues


def _parse_manifest(data: bytes) -> list[tuple[str, str]]:
    entries = []
    for line in data.decode().splitlines():
        rel, _, d = line.partition("\t")
        if not _HEX64.match(d):
            raise ArtifactError(f"bad manifest line {line!r}")
        entries.append((rel, d))
    return entries


def _force_remove(path: Path) -> None:
    for dirpath, _, _ in os.walk(path):
        os.chmod(dirpath, 0o755)
    import shutil

    shutil.rmtree(path)
