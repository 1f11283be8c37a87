"""A Ray task on a machine without the driver's run directory: the driver ships the run's public
small files and its store's settings, the task makes a run directory of its own from them and
opens the run there; a run that keeps its ledger or artifacts in the run directory is refused
with why."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from rsi_master.errors import RsiMasterError
from rsi_master.orchestra._shipped import SHIPPED_FILES, cache_root, local_run_dir, ship, shipped_env
from rsi_master.rundir import RunDir
from tests.helpers import draft


@pytest.fixture
def tmpdir_root(tmp_path, monkeypatch):
    """This machine's temporary directory, the test's own (where a task materialises its runs)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "machine-tmp"))
    (tmp_path / "machine-tmp").mkdir()
    return tmp_path / "machine-tmp"


def _pg_url_run(path, run_id="run-20260101-000000-abcdef"):
    """A run directory as a PostgreSQL + URL run has it (its files only), and key-like clutter."""
    path.mkdir()
    (path / "ledger.pg").write_text(json.dumps({"url": "postgresql://w@db/rsi", "run_id": run_id}))
    (path / "ledger.pub").write_text("-----BEGIN PUBLIC KEY-----\nabc\n-----END PUBLIC KEY-----\n")
    (path / "artifacts.json").write_text(json.dumps({"url": f"s3://bucket/{run_id}"}))
    (path / "secret.pem").write_text("PRIVATE")  # never shipped: only the named public files are
    return path


def test_the_driver_ships_only_the_public_files_and_the_store_and_ledger_settings(tmp_path):
    run = _pg_url_run(tmp_path / "run")
    env = {"AWS_ENDPOINT_URL": "http://s3:9000", "AWS_SECRET_ACCESS_KEY": "k", "PGPASSWORD": "p", "HOME": "/root"}
    env |= {"RSI_MASTER_KEY_DIR": "/keys", "FSSPEC_S3_ANON": "false"}
    shipped = ship(run, env)
    assert set(shipped.files) == set(SHIPPED_FILES) == {"ledger.pg", "ledger.pub", "artifacts.json"}
    assert shipped.files["ledger.pub"] == (run / "ledger.pub").read_bytes()
    assert dict(shipped.env) == {
        "AWS_ENDPOINT_URL": "http://s3:9000",
        "AWS_SECRET_ACCESS_KEY": "k",
        "PGPASSWORD": "p",
        "FSSPEC_S3_ANON": "false",
    }
    assert shipped.run_id == "run-20260101-000000-abcdef"
    assert "'k'" not in repr(shipped) and "http://s3:9000" not in repr(shipped)  # names only, in a log line


def test_a_task_without_the_run_directory_makes_its_own_with_exactly_the_shipped_files(tmp_path, tmpdir_root):
    shipped = ship(_pg_url_run(tmp_path / "run"), {})
    absent = str(tmp_path / "elsewhere" / "run")
    local = local_run_dir(absent, shipped)
    assert local == str(cache_root() / shipped.run_id) and str(tmpdir_root) in local
    assert sorted(os.listdir(local)) == sorted(SHIPPED_FILES)
    assert all(Path(local, n).read_bytes() == data for n, data in shipped.files.items())
    assert os.listdir(cache_root()) == [shipped.run_id]  # no half-written file left beside it
    # A second task on this machine uses the same directory; a changed file is written again.
    Path(local, "ledger.pub").write_bytes(b"stale")
    assert local_run_dir(absent, shipped) == local
    assert Path(local, "ledger.pub").read_bytes() == shipped.files["ledger.pub"]


def test_a_task_uses_the_run_directory_where_its_machine_has_it(tmp_path, tmpdir_root):
    run = _pg_url_run(tmp_path / "run")
    shipped = ship(run, {})
    assert local_run_dir(str(run), shipped) == str(run)
    # The path is there but holds another run's files (another machine's directory): not that one.
    (run / "ledger.pub").write_text("another key")
    assert local_run_dir(str(run), shipped) == str(cache_root() / shipped.run_id)


@pytest.mark.parametrize(
    ("drop", "why"),
    [
        ("ledger.pg", "ledger is the SQLite file"),
        ("artifacts.json", "artifacts are in the run directory's local store"),
    ],
)
def test_a_run_that_keeps_its_ledger_or_artifacts_in_the_run_directory_needs_it_shared(
    tmp_path, tmpdir_root, drop, why
):
    run = _pg_url_run(tmp_path / "run")
    (run / drop).unlink()
    shipped = ship(run, {"AWS_SECRET_ACCESS_KEY": "k", "HOME": "/root"})
    assert shipped.files == {}  # nothing to materialise; the settings of what is on a server still go
    assert dict(shipped.env) == {"AWS_SECRET_ACCESS_KEY": "k"}
    assert local_run_dir(str(run), shipped) == str(run)  # on a shared filesystem: that one
    with pytest.raises(RsiMasterError, match=f"filesystem every node shares.*{why}"):
        local_run_dir(str(tmp_path / "absent"), shipped)
    assert not cache_root().exists()
    for name in ("ledger.pg", "artifacts.json"):
        (run / name).unlink(missing_ok=True)
    assert ship(run, {"AWS_SECRET_ACCESS_KEY": "k"}).env == {}  # an embedded run: no credential sent


def test_the_shipped_settings_hold_while_the_task_runs_and_are_put_back(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://the-worker's")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    shipped = ship(_pg_url_run(tmp_path / "run"), {"AWS_ENDPOINT_URL": "http://s3", "AWS_SECRET_ACCESS_KEY": "k"})
    with shipped_env(shipped):
        assert os.environ["AWS_ENDPOINT_URL"] == "http://s3" and os.environ["AWS_SECRET_ACCESS_KEY"] == "k"
    assert os.environ["AWS_ENDPOINT_URL"] == "http://the-worker's" and "AWS_SECRET_ACCESS_KEY" not in os.environ


@pytest.mark.scale
def test_a_postgres_and_s3_run_opens_from_a_materialised_copy_and_reads_the_drivers_artifacts(
    tmp_path, tmpdir_root, postgres, s3, monkeypatch
):
    monkeypatch.delenv("RSI_MASTER_LEDGER", raising=False)
    with RunDir.create(tmp_path / "run", ledger=postgres.writer_url, artifacts=s3) as driver:
        digest = driver.store.put_bytes(b"an output of the driver's machine")
        driver.record(draft(0, "test.note"))
        shipped = ship(driver.path)
    env = dict(shipped.env)
    assert env["AWS_ENDPOINT_URL"] == os.environ["AWS_ENDPOINT_URL"]
    hidden = tmp_path / "run.moved"
    shutil.move(tmp_path / "run", hidden)  # the task's machine has no such path
    for key in env:
        monkeypatch.delenv(key)  # nor the driver's settings: they come with the task
    with shipped_env(shipped):
        local = local_run_dir(str(tmp_path / "run"), shipped)
        with RunDir.open(local) as task:
            assert task.run_id == shipped.run_id and [e.kind for e in task.ledger.events()][-1] == "test.note"
            assert task.store.read_bytes(digest) == b"an output of the driver's machine"
            assert (task.store.root / "objects").is_dir() and str(task.store.root).startswith(local)
