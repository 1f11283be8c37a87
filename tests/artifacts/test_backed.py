"""The run's store on shared storage (`SharedArtifactStore`), where it differs from a local store:
a directory cut short mid-upload is never an artifact, and pruning frees the shared store's blobs
and is seen from every machine. The contract both share is tests/artifacts/test_store.py."""

from __future__ import annotations

import pytest

from rsi_master.artifacts import SharedArtifactStore, SharedStore
from rsi_master.errors import ArtifactError

pytest.importorskip("fsspec")


@pytest.fixture(params=["shared", "s3"])
def url(request, tmp_path):
    return f"file://{tmp_path}/shared" if request.param == "shared" else request.getfixturevalue("s3")


def _tree(root, files):
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_a_directory_cut_short_mid_upload_is_never_an_artifact(tmp_path, url, monkeypatch):
    store = SharedArtifactStore(url, tmp_path / "cache")
    src = _tree(tmp_path / "ckpt", {"a.bin": b"a" * 1000, "b.bin": b"b" * 1000, "c.json": b"{}"})
    real, calls = SharedStore.put_file, []

    def dying(self, path):
        calls.append(path)
        if len(calls) == 2:
            raise OSError("connection lost mid-upload")
        return real(self, path)

    monkeypatch.setattr(SharedStore, "put_file", dying)
    with pytest.raises(OSError, match="mid-upload"):
        store.put_dir(src)
    monkeypatch.undo()
    other = SharedArtifactStore(url, tmp_path / "other")  # another machine sees no directory
    d = store.cache.put_dir(src)  # (already in this machine's cache: its digest)
    assert not other.has(d) and other.verify() == []
    with pytest.raises(ArtifactError, match="not in the store"):
        other.path(d)
    assert store.put_dir(src) == d  # a retry completes it
    assert other.kind(d) == "dir" and sorted(p.name for p in other.path(d).iterdir()) == ["a.bin", "b.bin", "c.json"]


def test_pruning_frees_shared_blobs_keeps_the_manifest_and_is_seen_everywhere(tmp_path, url):
    store = SharedArtifactStore(url, tmp_path / "cache")
    shared = b"shared tokenizer" * 100
    d1 = store.put_dir(_tree(tmp_path / "c1", {"w.bin": b"1" * 5000, "tok": shared}))
    d2 = store.put_dir(_tree(tmp_path / "c2", {"w.bin": b"2" * 3000, "tok": shared}))
    other = SharedArtifactStore(url, tmp_path / "other")
    other.path(d1)  # another machine had it cached
    assert store.prune_dirs([d1]) == 5000  # only the blob no other directory uses
    for s in (store, other):
        assert s.has(d1) and s.is_pruned(d1) and s.pruned() == [d1]
        with pytest.raises(ArtifactError, match="pruned"):
            s.kind(d1)
        assert s.kind(d2) == "dir"
    assert store.verify() == [] and store.missing_members([d1, d2]) == []
    assert sorted(store.digests()) == sorted([d1, d2, *(b for _, b in store.manifest(d2))])
