from __future__ import annotations

import hashlib
import os
import stat

import pytest

from rsi_master.artifacts import (
    ArtifactMismatch,
    ArtifactStore,
    SharedArtifactStore,
    copy_measured,
    dir_digest,
    file_digest,
    manifest_bytes,
    provenance,
    read_measured,
)
from rsi_master.errors import ArtifactError
from tests.helpers import draft, make_run


@pytest.fixture(params=["local", "shared", "s3"])
def store(request, tmp_path):
    """The run's store on each backend: a local directory, a shared path through fsspec, and an
    S3-compatible server (each shared one cached on this machine under `store/`)."""
    if request.param == "local":
        return ArtifactStore(tmp_path / "store")
    pytest.importorskip("fsspec")
    url = f"file://{tmp_path}/shared" if request.param == "shared" else request.getfixturevalue("s3")
    return SharedArtifactStore(url, tmp_path / "store")


def _tree(root, files):
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root


def test_files_are_named_by_sha256_stored_once_and_read_only(store, tmp_path):
    src = tmp_path / "f.bin"
    src.write_bytes(b"x" * 100_000)
    d1 = store.put_file(src)
    d2 = store.put_bytes(b"x" * 100_000)
    assert d1 == d2 == hashlib.sha256(b"x" * 100_000).hexdigest()
    assert list(store.digests()) == [d1]
    mode = store.path(d1).stat().st_mode
    assert not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert not any((store.root / "tmp").iterdir()), "no temporary file may be left behind"


def test_directory_digest_is_the_sorted_manifest(store, tmp_path):
    src = _tree(tmp_path / "ckpt", {"config.json": b"{}", "sub/w.bin": b"\1\2", "a.txt": b"a"})
    expected = hashlib.sha256(
        manifest_bytes(
            [
                ("a.txt", hashlib.sha256(b"a").hexdigest()),
                ("config.json", hashlib.sha256(b"{}").hexdigest()),
                ("sub/w.bin", hashlib.sha256(b"\1\2").hexdigest()),
            ]
        )
    ).hexdigest()
    assert dir_digest(src) == expected
    d = store.put_dir(src)
    assert d == expected and store.kind(d) == "dir"
    stored = store.path(d)
    assert (stored / "sub" / "w.bin").read_bytes() == b"\1\2"
    assert dir_digest(stored) == d
    # Same content from another place: same digest, nothing stored twice.
    before = sorted(store.digests())
    assert store.put_dir(_tree(tmp_path / "copy", {"a.txt": b"a", "config.json": b"{}", "sub/w.bin": b"\1\2"})) == d
    assert sorted(store.digests()) == before


def test_missing_paths_and_links_get_a_clear_error_and_nothing_is_written(store, tmp_path):
    for bad in (tmp_path / "nope.bin", tmp_path / "nodir"):
        with pytest.raises(ArtifactError, match="no such"):
            store.put(bad) if bad.suffix else store.put_dir(bad)
    linked = _tree(tmp_path / "linked", {"a": b"a"})
    os.symlink(linked / "a", linked / "b")
    with pytest.raises(ArtifactError, match="symbolic link"):
        store.put_dir(linked)
    assert list(store.digests()) == []
    with pytest.raises(ArtifactError):
        store.path("not-a-digest")


def test_verify_rehashes_and_names_what_changed(store, tmp_path):
    d = store.put_dir(_tree(tmp_path / "ckpt", {"w.bin": b"weights", "cfg": b"config"}))
    f = store.put_bytes(b"dataset")
    assert store.verify() == []
    tree = store.path(d)
    os.chmod(tree, 0o755)
    (tree / "extra").write_bytes(b"smuggled")
    issues = store.verify()
    assert [(i.digest, "added" in i.what) for i in issues] == [(d, True)]
    (tree / "extra").unlink()
    (tree / "cfg").unlink()  # replace a file with different bytes of the same size
    (tree / "cfg").write_bytes(b"CONFIG")
    assert any(i.digest == d and "cfg" in i.what for i in store.verify())
    blob = store.path(f)
    os.chmod(blob, 0o644)
    blob.write_bytes(b"DATASET")  # same size, same mtime does not matter: content is re-hashed
    assert any(i.digest == f and "does not match" in i.what for i in store.verify())


def test_file_digest_streams(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(os.urandom(9 << 20))
    assert file_digest(big) == hashlib.sha256(big.read_bytes()).hexdigest()


def test_provenance_walks_outputs_back_to_inputs(tmp_path):
    with make_run(tmp_path / "run", events=0, artifacts=0) as run:
        base = run.store.put_bytes(b"base model")
        data = run.store.put_bytes(b"data")
        ckpt1 = run.store.put_bytes(b"ckpt1")
        ckpt2 = run.store.put_bytes(b"ckpt2")
        run.record({**draft(0, kind="model.register"), "artifacts": [{"digest": base, "role": "output"}]})
        run.record({**draft(1, kind="data.generate"), "artifacts": [{"digest": data, "role": "output"}]})
        run.record(
            {
                **draft(2, kind="train.sft"),
                "artifacts": [
                    {"digest": base, "role": "input"},
                    {"digest": data, "role": "input"},
                    {"digest": ckpt1, "role": "output"},
                ],
            }
        )
        run.record(
            {
                **draft(3, kind="train.sft"),
                "artifacts": [
                    {"digest": ckpt1, "role": "input"},
                    {"digest": data, "role": "input"},
                    {"digest": ckpt2, "role": "output"},
                ],
            }
        )
        run.record({**draft(4, kind="eval"), "artifacts": [{"digest": ckpt2, "role": "input"}]})
        graph = provenance(run.ledger, ckpt2)
    assert graph.events() == [0, 1, 2, 3]
    top = graph.produced_by[0]
    assert top.seq == 3 and top.kind == "train.sft"
    inputs = {n.digest: n for n in top.inputs}
    assert set(inputs) == {ckpt1, data}
    assert inputs[ckpt1].produced_by[0].seq == 2
    # `data` is an input at two levels: expanded once, marked as shared the second time.
    assert graph.to_dict()["produced_by"][0]["seq"] == 3


def test_move_hands_files_over_without_copying(store, tmp_path):
    src = _tree(tmp_path / "out", {"model.safetensors": b"w" * 5000, "cfg/config.json": b"{}"})
    expected = dir_digest(src)
    inode = (src / "model.safetensors").stat().st_ino
    d = store.put_dir(src, move=True)
    assert d == expected and not src.exists()
    stored = store.path(d) / "model.safetensors"
    assert stored.stat().st_ino == inode  # the same bytes on disk, not a copy
    assert store.verify() == []
    single = tmp_path / "one.bin"
    single.write_bytes(b"abc")
    assert store.put_file(single, move=True) == hashlib.sha256(b"abc").hexdigest() and not single.exists()


# -- measured reads: the bytes handed on are the bytes hashed -------------------------------------
def test_copy_measured_hashes_what_it_writes(store, tmp_path):
    src = _tree(tmp_path / "ckpt", {"config.json": b"{}", "sub/w.bin": b"\1\2" * 3_000_000})
    d = store.put_dir(src)
    held = tmp_path / "held"
    held.mkdir(mode=0o700)
    assert copy_measured(store.path(d), held / "ckpt") == d == dir_digest(held / "ckpt")
    assert copy_measured(store.path(d) / "config.json", held / "c.json") == hashlib.sha256(b"{}").hexdigest()
    assert not (held / "ckpt" / "config.json").stat().st_mode & 0o277  # private, read-only copies
    assert (held / "ckpt" / "sub").stat().st_mode & 0o777 == 0o700
    with pytest.raises(FileExistsError):  # never writes into an existing copy
        copy_measured(store.path(d), held / "ckpt")


def test_copy_measured_refuses_links_and_reports_changed_bytes(store, tmp_path):
    d = store.put_dir(_tree(tmp_path / "ckpt", {"config.json": b"{}", "w.bin": b"weights"}))
    tree = store.path(d)
    os.chmod(tree, 0o755)
    (tree / "w.bin").unlink()
    (tmp_path / "other.bin").write_bytes(b"other weights")
    (tree / "w.bin").symlink_to(tmp_path / "other.bin")
    with pytest.raises(ArtifactError, match="symbolic link"):
        copy_measured(tree, tmp_path / "copy1")
    (tree / "w.bin").unlink()
    (tree / "w.bin").write_bytes(b"other weights")
    assert copy_measured(tree, tmp_path / "copy2") != d  # a plain swap copies, but measures differently
    os.symlink(tree, tmp_path / "linked")
    with pytest.raises(ArtifactError, match="symbolic link"):
        copy_measured(tmp_path / "linked", tmp_path / "copy3")


def test_read_bytes_refuses_bytes_that_do_not_hash_to_the_name(store, tmp_path):
    d = store.put_bytes(b'{"score": 0.1}')
    blob = store.path(d)
    os.chmod(blob.parent, 0o755)
    blob.unlink()
    blob.write_bytes(b'{"score": 0.9}')
    with pytest.raises(ArtifactMismatch) as exc:
        store.read_bytes(d)
    assert exc.value.measured == hashlib.sha256(b'{"score": 0.9}').hexdigest()
    assert store.read_measured(d) == (b'{"score": 0.9}', exc.value.measured)
    blob.unlink()
    (tmp_path / "planted.json").write_bytes(b'{"score": 0.1}')
    blob.symlink_to(tmp_path / "planted.json")  # even identical bytes behind a link are refused
    with pytest.raises(ArtifactError, match="symbolic link"):
        store.read_bytes(d)
    with pytest.raises(ArtifactError, match="symbolic link"):
        read_measured(blob)
    assert any("not a regular file" in i.what for i in store.verify())


def test_a_stored_directory_replaced_by_a_symlink_is_reported(store, tmp_path):
    d = store.put_dir(_tree(tmp_path / "ckpt", {"config.json": b"{}"}))
    copy = _tree(tmp_path / "same", {"config.json": b"{}"})
    tree = store.path(d)
    os.chmod(tree, 0o755)
    (tree / "config.json").unlink()
    tree.rmdir()
    tree.symlink_to(copy)
    assert [i.what.rsplit(": ", 1)[-1] for i in store.verify()] == [
        "the stored directory was replaced by a symbolic link"
    ]


def test_a_digest_is_remembered_only_for_a_settled_file_nobody_has_open_for_writing(tmp_path, monkeypatch):
    import time

    from rsi_master.artifacts import DigestCache, _digests

    f = tmp_path / "f"
    f.write_bytes(b"stored bytes")
    want = hashlib.sha256(b"stored bytes").hexdigest()

    def twice(cache: DigestCache) -> tuple[int, int]:
        assert cache.digest(f, os.lstat(f)) == want and cache.digest(f, os.lstat(f)) == want
        return cache.hashed, cache.reused

    assert twice(DigestCache()) == (2, 0)  # changed less than 2 s ago: a change now could keep its ctime
    monkeypatch.setattr(_digests, "SETTLED_NS", 50_000_000)
    time.sleep(0.1)
    if hasattr(__import__("fcntl"), "F_SETLEASE"):
        with open(f, "r+b"):  # a writer (or a writable mapping) could change it without moving ctime
            assert twice(DigestCache()) == (2, 0)
    assert twice(DigestCache()) == (1, 1)
