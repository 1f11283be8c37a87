"""`verify` catches any single-byte change, and a ledger rolled back to an older copy."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rsi_master.ledger import SignedCheckpoint
from rsi_master.rundir import RunDir, verify_run
from tests.helpers import draft, make_run

EVENT_COLUMNS = ["prev_hash", "hash", "kind", "actor_role", "actor_id", "ts", "body"]
CHECKPOINT_COLUMNS = ["root", "body", "signature"]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """One closed run (12 events, checkpoints at 4, 8, 12) that each example copies."""
    base = tmp_path_factory.mktemp("template")
    keys = base / "keys"
    with RunDir.create(base / "run", key_dir=keys, checkpoint_every=4) as run:
        digests = [run.store.put_bytes(f"artifact {i}\n".encode() * 10) for i in range(2)]
        for i in range(12):
            refs = [{"digest": digests[i % 2], "role": "output"}] if i % 3 == 0 else []
            run.record({**draft(i), "artifacts": refs})
    return base / "run", keys


def _copy(template, tmp_path_factory) -> tuple[Path, Path]:
    """A copy with its own key directory (copies share a run id, hence a witness file)."""
    src, keys = template
    case = tmp_path_factory.mktemp("case")
    shutil.copytree(src, case / "run")
    shutil.copytree(keys, case / "keys")
    return case / "run", case / "keys"


def _tamper(db: Path, table: str, key_col: str, key: int, column: str, pos: int, new: int) -> bool:
    """Change one byte of one stored value as an attacker with file access would:
    drop the append-only trigger, write, put the trigger back verbatim."""
    conn = sqlite3.connect(db, isolation_level=None)
    value = conn.execute(f"SELECT {column} FROM {table} WHERE {key_col} = ?", (key,)).fetchone()[0]
    raw = bytearray(value if isinstance(value, bytes) else value.encode())
    pos %= len(raw)
    if column == "body":
        if raw[pos] == new:
            return False
        raw[pos] = new
        changed: object = bytes(raw)
    else:  # text columns: another printable ASCII byte
        ch = 0x21 + new % 94
        if raw[pos] == ch:
            return False
        raw[pos] = ch
        changed = raw.decode()
    trigger = f"{table}_no_update"
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (trigger,)).fetchone()[0]
    conn.execute(f"DROP TRIGGER {trigger}")
    conn.execute(f"UPDATE {table} SET {column} = ? WHERE {key_col} = ?", (changed, key))
    conn.execute(sql)
    conn.close()
    return True


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 30), batch=st.integers(1, 5), every=st.integers(1, 8), payload=st.dictionaries(
    st.text(min_size=1, max_size=8), st.one_of(st.integers(-2**53 + 1, 2**53 - 1), st.text(max_size=20),
                                               st.booleans(), st.none(), st.floats(allow_nan=False, allow_infinity=False)),
    max_size=4))
def test_any_sequence_of_appends_verifies(tmp_path_factory, n, batch, every, payload):
    path = tmp_path_factory.mktemp("prop") / "run"
    with RunDir.create(path, checkpoint_every=every) as run:
        i = 0
        while i < n:
            k = min(batch, n - i)
            run.record_many([{**draft(i + j), "payload": {**payload, "i": i + j}} for j in range(k)])
            i += k
    report = verify_run(path)
    assert report.ok, report.problems
    assert report.ledger.events == n and report.unsigned_tail == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seq=st.integers(0, 11), column=st.sampled_from(EVENT_COLUMNS), pos=st.integers(0, 10_000),
       new=st.integers(0, 255))
def test_any_single_byte_change_to_an_event_row_is_named(template, tmp_path_factory, seq, column, pos, new):
    path, keys = _copy(template, tmp_path_factory)
    assume(_tamper(path / "ledger.db", "events", "seq", seq, column, pos, new))
    report = verify_run(path, key_dir=keys)
    assert not report.ok
    assert str(report.problems[0]).startswith(f"event {seq}:"), report.problems


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.sampled_from([4, 8, 12]), column=st.sampled_from(CHECKPOINT_COLUMNS), pos=st.integers(0, 10_000),
       new=st.integers(0, 255))
def test_any_single_byte_change_to_a_checkpoint_is_named(template, tmp_path_factory, size, column, pos, new):
    path, keys = _copy(template, tmp_path_factory)
    assume(_tamper(path / "ledger.db", "checkpoints", "tree_size", size, column, pos, new))
    report = verify_run(path, key_dir=keys)
    assert not report.ok
    assert any(str(p).startswith(f"checkpoint {size}:") for p in report.problems), report.problems


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 100), pos=st.integers(0, 10_000), new=st.integers(0, 255))
def test_any_single_byte_change_to_an_artifact_is_named(template, tmp_path_factory, which, pos, new):
    path, keys = _copy(template, tmp_path_factory)
    blobs = sorted(p for p in (path / "artifacts" / "objects").rglob("*") if p.is_file())
    blob = blobs[which % len(blobs)]
    data = bytearray(blob.read_bytes())
    pos %= len(data)
    assume(data[pos] != new)
    data[pos] = new
    os.chmod(blob, 0o644)
    blob.write_bytes(bytes(data))
    report = verify_run(path, key_dir=keys)
    assert not report.ok
    digest = blob.parent.name + blob.name
    assert str(report.problems[0]).startswith(f"artifact {digest}:"), report.problems


def test_removed_trigger_is_reported(template, tmp_path_factory):
    path, keys = _copy(template, tmp_path_factory)
    conn = sqlite3.connect(path / "ledger.db")
    conn.execute("DROP TRIGGER events_no_delete")
    conn.commit()
    conn.close()
    report = verify_run(path, key_dir=keys)
    assert not report.ok and "events_no_delete" in str(report.problems[0])


def test_rollback_to_an_older_copy_is_detected(tmp_path):
    path = tmp_path / "run"
    run = make_run(path, events=5, checkpoint_every=100)
    run.ledger.checkpoint()
    run.close()
    old = tmp_path / "old.db"
    shutil.copy(path / "ledger.db", old)  # the attacker keeps an older copy
    with RunDir.open(path, writable=True) as run:
        run.record_many([draft(i) for i in range(5, 9)])
    exported = tmp_path / "exported.json"
    with RunDir.open(path, writable=True) as run:
        run.ledger.checkpoint().dump(exported)
    assert verify_run(path).ok
    shutil.copy(old, path / "ledger.db")  # ... and puts it back
    for wal in ("ledger.db-wal", "ledger.db-shm"):
        (path / wal).unlink(missing_ok=True)
    # The older copy is internally consistent: only a trust anchor outside the run can tell,
    # and without one `verify` says it has nothing to check against.
    report = verify_run(path, key_dir=tmp_path / "no-keys")
    assert report.ledger.ok and report.ledger.events == 5
    assert not report.ok and "has no record of run" in str(report.problems[0])
    report = verify_run(path, key_dir=tmp_path / "no-keys", checkpoint=exported)
    assert not report.ok and "rolled back or truncated" in str(report.problems[0])
    # The operator key directory keeps a witness and uses it by default.
    report = verify_run(path)
    assert not report.ok and "covers 9 events, the ledger has 5" in str(report.problems[0])


def test_rewritten_history_is_detected_against_an_exported_checkpoint(tmp_path, key_dir):
    path = tmp_path / "run"
    make_run(path, events=6, checkpoint_every=100).close()
    exported = tmp_path / "exported.json"
    shutil.copy(key_dir / "witness" / f"{RunDir.open(path).run_id}.json", exported)
    # Replace the run with a different history signed by a *different* key.
    shutil.rmtree(path)
    other_keys = tmp_path / "attacker-keys"
    with RunDir.create(path, key_dir=other_keys, run_id=SignedCheckpoint.load(exported).checkpoint.run_id) as run:
        run.record_many([draft(100 + i) for i in range(6)])
    report = verify_run(path, key_dir=other_keys, checkpoint=exported)
    assert not report.ok and "not signed by this run's key" in str(report.problems[0])
