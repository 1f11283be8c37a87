"""SHA-256 digests of bytes, files and directories.

Directory digests follow the artifact store's manifest rule (lines
``"<relpath>\\t<sha256hex>\\n"`` sorted by path, hashed as UTF-8) so that a digest computed
here equals the one `rsi_master.artifacts` gives the same tree.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from rsi_master.artifacts import dir_digest as store_dir_digest
from rsi_master.artifacts import file_digest  # one definition of a file digest

# Bytecode caches appear whenever Python imports from a directory; they are not content.
_IGNORED_PARTS = frozenset({"__pycache__"})


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    return file_digest(path)


def _manifest(root: Path, ignore_pycache: bool) -> str:
    lines = []
    for p in root.rglob("*"):
        if p.is_dir():
            continue
        rel = p.relative_to(root)
        if ignore_pycache and _IGNORED_PARTS.intersection(rel.parts):
            continue
        lines.append((rel.as_posix(), sha256_file(p)))
    lines.sort()
    return "".join(f"{rel}\t{digest}\n" for rel, digest in lines)


def dir_digest(path: str | Path, *, ignore_pycache: bool = False) -> str:
    """Digest of a directory tree: SHA-256 of its sorted manifest.

    Defers to the artifact store's implementation, so there is one definition of a directory
    digest in the system.
    """
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"not a directory: {root}")
    if not ignore_pycache:
        return store_dir_digest(root)
    return sha256_bytes(_manifest(root, ignore_pycache).encode("utf-8"))
