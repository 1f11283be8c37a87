"""Artifacts on shared storage through fsspec: named by measured digest, streamed in chunks with
flat memory, a partial upload never taken for an artifact, a changed blob refused on download."""

from __future__ import annotations

import hashlib
import os
import tracemalloc

import pytest

from rsi_master.errors import ArtifactError

pytest.importorskip("fsspec")

from rsi_master.artifacts import SharedStore


def _big_file(path, size: int) -> str:
    """A file of `size` bytes written in 4 MiB pieces (never whole in memory); its SHA-256."""
    h = hashlib.sha256()
    piece = os.urandom(1 << 22)
    with open(path, "wb") as fh:
        left = size
        while left:
            chunk = piece[: min(left, len(piece))]
            fh.write(chunk)
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


@pytest.mark.parametrize("scheme", ["memory", "file"])
def test_a_file_put_and_read_back_by_its_digest(tmp_path, scheme):
    url = f"memory://store-{tmp_path.name}" if scheme == "memory" else f"file://{tmp_path}/shared"
    store = SharedStore(url)
    src = tmp_path / "ckpt.bin"
    want = _big_file(src, 9 * (1 << 20) + 7)
    assert store.put_file(src) == want and store.has(want)
    assert store.put_file(src) == want  # stored once
    out = store.get_file(want, tmp_path / "back.bin")
    assert hashlib.sha256(out.read_bytes()).hexdigest() == want
    assert not store.fs.ls(f"{store.root}/tmp")  # no upload left behind


def test_a_partial_upload_is_never_an_artifact(tmp_path, monkeypatch):
    store = SharedStore(f"file://{tmp_path}/shared")
    src = tmp_path / "ckpt.bin"
    want = _big_file(src, 3 * (1 << 22))
    real_open = open
    reads = []

    class Dying:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def read(self, n):
            reads.append(n)
            if len(reads) == 2:
                raise OSError("connection lost mid-upload")
            return self.fh.read(n)

    def fake_open(path, *args, **kwargs):
        fh = real_open(path, *args, **kwargs)
        return Dying(fh) if path == src else fh

    monkeypatch.setattr("builtins.open", fake_open)
    with pytest.raises(OSError, match="mid-upload"):
        store.put_file(src)
    monkeypatch.undo()
    assert not store.has(want)
    assert store.fs.find(f"{store.root}") == []  # neither an object nor a temp file


def test_a_changed_shared_blob_is_refused_on_download(tmp_path):
    store = SharedStore(f"file://{tmp_path}/shared")
    src = tmp_path / "a.bin"
    src.write_bytes(b"weights" * 1000)
    d = store.put_file(src)
    blob = store._blob(d)
    os.chmod(blob, 0o644)
    with open(blob, "r+b") as fh:
        fh.write(b"W")
    with pytest.raises(ArtifactError, match="hash to"):
        store.get_file(d, tmp_path / "b.bin")
    assert not (tmp_path / "b.bin").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".b.bin")] == []


def test_a_bad_digest_is_one_clear_error(tmp_path):
    store = SharedStore(f"file://{tmp_path}/shared")
    with pytest.raises(ArtifactError, match="not an artifact digest"):
        store.get_file("../etc/passwd", tmp_path / "x")
    with pytest.raises(ArtifactError, match="not in the shared store"):
        store.get_file("0" * 64, tmp_path / "x")


def _flat_memory_roundtrip(tmp_path, size: int) -> int:
    store = SharedStore(f"file://{tmp_path}/shared")
    src = tmp_path / "big.bin"
    want = _big_file(src, size)
    tracemalloc.start()
    try:
        assert store.put_file(src) == want
        store.get_file(want, tmp_path / "back.bin")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (tmp_path / "back.bin").stat().st_size == size
    return peak


def test_a_large_file_moves_with_flat_memory(tmp_path):
    peak = _flat_memory_roundtrip(tmp_path, 96 * (1 << 20))
    assert peak < 16 * (1 << 20), peak  # a few 4 MiB chunks, not the 96 MiB file


@pytest.mark.slow
def test_a_2gb_file_moves_with_flat_memory(tmp_path):
    peak = _flat_memory_roundtrip(tmp_path, 2 * (1 << 30))
    assert peak < 16 * (1 << 20), peak
