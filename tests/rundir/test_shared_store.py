"""A run whose artifacts are on shared storage (`RunDir.create(artifacts=URL)`): the URL is recorded
in the run, so every later opening finds it; another machine (the run directory without this
machine's cache) reads every artifact by digest; `verify` names a changed blob, a missing member
and a directory whose tree marker is gone; `export` brings the artifacts down into a run directory
that verifies on its own. On a shared path and on an S3-compatible server."""

from __future__ import annotations

import json
import shutil

import pytest

from rsi_master.artifacts import SharedArtifactStore, dir_digest
from rsi_master.errors import ArtifactError
from rsi_master.rundir import RunDir, export_run, verify_run
from tests.helpers import draft

pytest.importorskip("fsspec")


@pytest.fixture(params=["shared", "s3"])
def url(request, tmp_path):
    return f"file://{tmp_path}/shared" if request.param == "shared" else request.getfixturevalue("s3")


def _ckpt(root):
    (root / "sub").mkdir(parents=True)
    (root / "config.json").write_bytes(b"{}")
    (root / "sub" / "w.bin").write_bytes(b"weights" * 1000)
    return root


def _run(tmp_path, url):
    run = RunDir.create(tmp_path / "run", artifacts=url)
    ckpt = run.store.put_dir(_ckpt(tmp_path / "ckpt"))
    data = run.store.put_bytes(b"data")
    run.record({**draft(0), "artifacts": [{"digest": ckpt, "role": "output"}, {"digest": data, "role": "input"}]})
    run.close()
    return ckpt, data


def _problems(tmp_path):
    return [str(p) for p in verify_run(tmp_path / "run").problems]


def test_a_run_on_shared_storage_is_read_by_digest_from_another_machine(tmp_path, url):
    ckpt, data = _run(tmp_path, url)
    pointer = json.loads((tmp_path / "run" / "artifacts.json").read_text())["url"]
    assert pointer.startswith(url + "/run-")
    assert _problems(tmp_path) == []
    shutil.rmtree(tmp_path / "run" / "artifacts")  # another machine: only the run directory's pointers
    with RunDir.open(tmp_path / "run") as run:
        assert isinstance(run.store, SharedArtifactStore) and run.store.url == pointer
        assert run.store.kind(ckpt) == "dir" and dir_digest(run.store.path(ckpt)) == ckpt
        assert run.store.read_bytes(data) == b"data"
    assert _problems(tmp_path) == []
    out = export_run(tmp_path / "run", tmp_path / "out")
    assert not (out / "artifacts.json").exists()
    assert verify_run(out).ok


def test_verify_names_a_changed_blob_a_missing_member_and_a_removed_tree(tmp_path, url):
    ckpt, data = _run(tmp_path, url)
    with RunDir.open(tmp_path / "run") as run:
        store = run.store
        assert isinstance(store, SharedArtifactStore)
        fs, root = store.shared.fs, store.shared.root
        member = dict(store.manifest(ckpt))["sub/w.bin"]
    fs.pipe_file(f"{root}/objects/{data[:2]}/{data[2:]}", b"DATA")
    assert _problems(tmp_path) == [f"artifact {data}: content does not match its digest (file modified)"]
    fs.rm_file(f"{root}/objects/{member[:2]}/{member[2:]}")
    assert f"artifact {ckpt}: file sub/w.bin is missing from the store's objects" in _problems(tmp_path)
    fs.rm_file(f"{root}/trees/{ckpt}")
    assert any(p.startswith(f"artifact {ckpt}: stored directory missing") for p in _problems(tmp_path))
    shutil.rmtree(tmp_path / "run" / "artifacts")
    with RunDir.open(tmp_path / "run") as run, pytest.raises(ArtifactError, match="hash to"):
        run.store.read_bytes(data)  # another machine refuses the changed bytes
    assert not any((tmp_path / "run" / "artifacts" / "objects").rglob("*"))  # and keeps none of them


def test_a_bad_pointer_or_url_is_one_clear_error(tmp_path):
    from rsi_master.errors import NotARunError

    with pytest.raises(ArtifactError, match="fsspec knows no protocol 'nosuch'"):
        RunDir.create(tmp_path / "a", artifacts="nosuch://x")
    assert not (tmp_path / "a").exists()
    _run(tmp_path, f"file://{tmp_path}/shared")
    (tmp_path / "run" / "artifacts.json").write_text("[]")
    with pytest.raises(NotARunError, match="not an artifact store pointer"):
        RunDir.open(tmp_path / "run")
