"""`verify` catches any single-byte change, and a ledger rolled back to an older copy."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rsi_master.errors import NotARunError, RsiMasterError
from rsi_master.ledger import SignedCheckpoint
from rsi_master.rundir import RunDir, VerifyMemo, verify_run
from tests.helpers import draft, make_run
from tests.ledger.attacks import (
    COPY,
    DROP_SIGNATURES,
    FORGE_TAIL,
    REPLACE_WITH_OWN_KEY,
    REWRITE,
    SET_META,
    as_agent,
    drop_wal,
)

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
@given(
    n=st.integers(0, 30),
    batch=st.integers(1, 5),
    every=st.integers(1, 8),
    payload=st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(
            st.integers(-(2**53) + 1, 2**53 - 1),
            st.text(max_size=20),
            st.booleans(),
            st.none(),
            st.floats(allow_nan=False, allow_infinity=False),
        ),
        max_size=4,
    ),
)
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
@given(
    seq=st.integers(0, 11), column=st.sampled_from(EVENT_COLUMNS), pos=st.integers(0, 10_000), new=st.integers(0, 255)
)
def test_any_single_byte_change_to_an_event_row_is_named(template, tmp_path_factory, seq, column, pos, new):
    path, keys = _copy(template, tmp_path_factory)
    memo = VerifyMemo()  # a process that verified the run before the change
    assert verify_run(path, key_dir=keys, memo=memo).ok
    assume(_tamper(path / "ledger.db", "events", "seq", seq, column, pos, new))
    report = verify_run(path, key_dir=keys)
    assert not report.ok
    assert str(report.problems[0]).startswith(f"event {seq}:"), report.problems
    assert verify_run(path, key_dir=keys, memo=memo).problems == report.problems


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    size=st.sampled_from([4, 8, 12]),
    column=st.sampled_from(CHECKPOINT_COLUMNS),
    pos=st.integers(0, 10_000),
    new=st.integers(0, 255),
)
def test_any_single_byte_change_to_a_checkpoint_is_named(template, tmp_path_factory, size, column, pos, new):
    path, keys = _copy(template, tmp_path_factory)
    memo = VerifyMemo()
    assert verify_run(path, key_dir=keys, memo=memo).ok
    assume(_tamper(path / "ledger.db", "checkpoints", "tree_size", size, column, pos, new))
    report = verify_run(path, key_dir=keys)
    assert not report.ok
    assert any(str(p).startswith(f"checkpoint {size}:") for p in report.problems), report.problems
    assert verify_run(path, key_dir=keys, memo=memo).problems == report.problems


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


# -- attacks on the ledger by an agent with a shell (see docs/ledger.md) ------------------------
def _witness_bytes(key_dir: Path, run_id: str) -> bytes | None:
    path = key_dir / "witness" / f"{run_id}.json"
    return path.read_bytes() if path.exists() else None


def _attack_forged_tail(path, key_dir, scratch):
    as_agent(FORGE_TAIL, path / "ledger.db", 2, scratch=scratch)
    return "not covered by the signed head", "not covered by the signed head"


def _attack_rollback(path, key_dir, scratch):
    old = scratch / "old.db"
    shutil.copy(path / "ledger.db", old)  # kept by the agent earlier
    with RunDir.open(path, writable=True) as run:
        run.record_many([draft(100 + i) for i in range(3)])
    as_agent(COPY, old, path / "ledger.db", scratch=scratch)
    drop_wal(path)
    return "rolled back or truncated", "rolled back or truncated"


def _attack_rewrite(path, key_dir, scratch):
    as_agent(REWRITE, path / "ledger.db", 2, scratch=scratch)
    return "history differs from the operator's witness", "history rewritten"


def _attack_own_key(path, key_dir, scratch):
    run_id = RunDir.open(path).run_id
    as_agent(REPLACE_WITH_OWN_KEY, path, run_id, scratch, scratch=scratch)
    return "no signing key for this run", "differs from the operator's key for this run"


def _attack_delete_witness(path, key_dir, scratch):
    (key_dir / "witness" / f"{RunDir.open(path).run_id}.json").unlink()
    return "witness", "witness"


def _attack_zero_checkpoints(path, key_dir, scratch):
    as_agent(DROP_SIGNATURES, path / "ledger.db", scratch=scratch)
    return "no signed head", "no signed checkpoint"


def _attack_swap_in_another_run(path, key_dir, scratch):
    other = scratch / "other-run"
    make_run(other, events=8).close()  # a genuine run, same operator key
    as_agent(COPY, other / "ledger.db", path / "ledger.db", scratch=scratch)
    drop_wal(path)
    return "run directory replaced", "run directory replaced"


def _attack_downgrade_to_version_1(path, key_dir, scratch):
    as_agent(SET_META, path / "ledger.db", "schema", "1", scratch=scratch)
    return "version-1 ledger", "a version-2 checkpoint in a version-1 ledger"


ATTACKS = {
    f.__name__.removeprefix("_attack_"): f
    for f in (
        _attack_forged_tail,
        _attack_rollback,
        _attack_rewrite,
        _attack_own_key,
        _attack_delete_witness,
        _attack_zero_checkpoints,
        _attack_swap_in_another_run,
        _attack_downgrade_to_version_1,
    )
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attacks_are_refused_by_the_writer_and_named_by_verify(tmp_path, key_dir, attack):
    path = tmp_path / "run"
    run = make_run(path, events=8, checkpoint_every=4)
    run_id = run.run_id
    run.close()
    memo = VerifyMemo()  # this process verified the run before the attack
    assert verify_run(path, memo=memo).ok
    (tmp_path / "agent").mkdir()
    writer_says, verify_says = ATTACKS[attack](path, key_dir, tmp_path / "agent")
    witness = _witness_bytes(key_dir, run_id)
    # One more writer (the next tool call) must not make the attack the new truth.
    with pytest.raises(RsiMasterError, match=writer_says):
        RunDir.open(path, writable=True).record(draft(999))
    assert _witness_bytes(key_dir, run_id) == witness  # the operator's witness is untouched
    report = verify_run(path)
    assert not report.ok
    assert any(verify_says in str(p) for p in report.problems), report.problems
    # What this process remembers from before the attack hides none of it.
    assert verify_run(path, memo=memo).problems == report.problems


def test_a_forged_run_id_cannot_reach_outside_the_key_directory(tmp_path, key_dir):
    path = tmp_path / "run"
    make_run(path, events=3).close()
    as_agent(SET_META, path / "ledger.db", "run_id", "../../outside", scratch=tmp_path / "agent")
    for open_ in (lambda: RunDir.open(path, writable=True), lambda: verify_run(path)):
        with pytest.raises(NotARunError, match="invalid run id"):
            open_()
    assert not (key_dir.parent / "outside.json").exists()


def test_the_witness_follows_every_commit_so_a_rollback_within_a_session_is_caught(tmp_path, key_dir):
    path = tmp_path / "run"
    make_run(path, events=5, checkpoint_every=1000).close()
    shutil.copy(path / "ledger.db", tmp_path / "old.db")
    run = RunDir.open(path, writable=True)
    run.record(draft(5))
    run.ledger.connection.close()  # the harness dies: no close, no checkpoint
    shutil.copy(tmp_path / "old.db", path / "ledger.db")
    drop_wal(path)
    with pytest.raises(RsiMasterError, match="witness covers 6 events, the ledger has 5"):
        RunDir.open(path, writable=True)
    assert "covers 6 events, the ledger has 5" in str(verify_run(path).problems[0])


def test_a_writer_that_died_before_moving_the_witness_is_repaired_by_the_next(tmp_path, key_dir):
    path = tmp_path / "run"
    run = make_run(path, events=5, checkpoint_every=1000)
    witness = key_dir / "witness" / f"{run.run_id}.json"
    behind = witness.read_bytes()
    run.record(draft(5))
    run.ledger.connection.close()
    witness.write_bytes(behind)  # as if killed between the commit and the witness write
    with RunDir.open(path, writable=True) as run:
        assert SignedCheckpoint.load(witness).checkpoint.tree_size == 6
        run.record(draft(6))
    assert verify_run(path).ok


def test_events_after_the_final_record_are_named(tmp_path):
    path = tmp_path / "run"
    with make_run(path, events=3) as run:
        # A worker cannot end the run: its "finish" is an ordinary event.
        run.record(draft(3, kind="orchestra.finish"))
        run.record({"kind": "orchestra.finish", "actor": {"role": "harness", "id": "orchestra"}, "payload": {}})
    assert verify_run(path).ok
    with RunDir.open(path, writable=True) as run:
        run.record(draft(5, kind="eval.record"))
    report = verify_run(path)
    assert [str(p) for p in report.problems] == [
        "event 5: event after the run's final record (event 4, orchestra.finish): eval.record by worker/w1"
    ]


def test_a_copied_run_with_its_key_directory_still_verifies_and_says_so(tmp_path, key_dir):
    make_run(tmp_path / "run", events=4).close()
    shutil.copytree(tmp_path / "run", tmp_path / "moved")
    report = verify_run(tmp_path / "moved")
    assert report.ok and "moved or copied" in report.notes[0]


def _mth(leaves: list[bytes]) -> bytes:
    """RFC 6962 section 2.1, written from the RFC: MTH({}) = SHA-256(), MTH({d0}) is the leaf
    hash, else SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n])), k the largest power of 2 < n."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + _mth(leaves[:k]) + _mth(leaves[k:])).digest()


def test_a_version_1_run_keeps_verifying_but_is_not_appended_to(tmp_path, key_dir):
    """Runs written before checkpoint version 2 signed roots over the raw event hashes."""
    from rsi_master.artifacts import ArtifactStore
    from rsi_master.ledger import Checkpoint, KeyDir, public_key_pem, utc_now
    from rsi_master.ledger._event import EventDraft, seal
    from rsi_master.ledger._schema import FORMAT, SCHEMA_V1

    path, run_id = tmp_path / "old-run", "run-v1"
    signer = KeyDir(key_dir).default()
    path.mkdir()
    (path / "ledger.pub").write_bytes(public_key_pem(signer.public))
    ArtifactStore(path / "artifacts")
    conn = sqlite3.connect(path / "ledger.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for stmt in SCHEMA_V1:
        conn.execute(stmt)
    conn.executemany(
        "INSERT INTO meta VALUES (?, ?)",
        [("format", FORMAT), ("schema", "1"), ("run_id", run_id), ("created", utc_now())],
    )
    prev, hashes = "0" * 64, []
    for i in range(6):
        event, body = seal(EventDraft.model_validate(draft(i)), seq=i, ts=utc_now(), prev_hash=prev)
        conn.execute(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (i, prev, event.hash, event.kind, "worker", "w1", event.ts, body),
        )
        prev = event.hash
        hashes.append(bytes.fromhex(event.hash))
    cp = Checkpoint(version=1, run_id=run_id, tree_size=6, root=_mth(hashes).hex(), ts=utc_now(), key_id=signer.key_id)
    signed = SignedCheckpoint.sign(cp, signer)
    conn.execute("INSERT INTO checkpoints VALUES (6, ?, ?, ?)", (cp.root, cp.message(), signed.signature))
    conn.close()
    signed.dump(key_dir / "witness" / f"{run_id}.json")
    report = verify_run(path)
    assert report.ok, report.problems
    assert report.ledger.version == 1 and "version-1 run" in report.notes[0]
    with pytest.raises(RsiMasterError, match="version-1 ledger"):
        RunDir.open(path, writable=True)


def test_a_new_run_where_a_deleted_one_was_is_its_own(tmp_path, key_dir):
    make_run(tmp_path / "run", events=3).close()
    old = tmp_path / "old-run"
    shutil.copytree(tmp_path / "run", old)
    shutil.rmtree(tmp_path / "run")
    make_run(tmp_path / "run", events=2).close()
    with RunDir.open(tmp_path / "run", writable=True) as run:
        run.record(draft(2))
    assert verify_run(tmp_path / "run").ok
    # ... and the deleted run's ledger put back in its place is not.
    shutil.copy(old / "ledger.db", tmp_path / "run" / "ledger.db")
    drop_wal(tmp_path / "run")
    assert "run directory replaced" in str(verify_run(tmp_path / "run").problems[0])


def test_an_upper_cased_signature_is_named_though_it_decodes_the_same(template, tmp_path_factory):
    path, keys = _copy(template, tmp_path_factory)
    conn = sqlite3.connect(path / "ledger.db")
    sig = conn.execute("SELECT signature FROM checkpoints WHERE tree_size = 4").fetchone()[0]
    conn.close()
    pos = next(i for i, c in enumerate(sig) if c in "abcdef")
    assert _tamper(path / "ledger.db", "checkpoints", "tree_size", 4, "signature", pos, ord(sig[pos].upper()) - 0x21)
    report = verify_run(path, key_dir=keys)
    assert [str(p) for p in report.problems] == ["checkpoint 4: signature is not in canonical form (lower-case hex)"]


# -- a process that verifies one run again and again (a Reviewer's audits) ---------------------
@pytest.fixture
def settle(monkeypatch):
    """Files count as settled 50 ms after their last change (instead of 2 s); returns a wait
    long enough for the files written so far to settle."""
    from rsi_master.artifacts import _digests

    monkeypatch.setattr(_digests, "SETTLED_NS", 50_000_000)
    return lambda: time.sleep(0.1)


def _blob(path: Path) -> Path:
    return sorted(p for p in (path / "artifacts" / "objects").rglob("*") if p.is_file())[0]


def _primed(path: Path) -> VerifyMemo:
    """A memo that has verified the run twice: the second time from what it remembered."""
    memo = VerifyMemo()
    assert verify_run(path, memo=memo).ok
    hashed = memo.digests.hashed
    assert verify_run(path, memo=memo).ok
    assert memo.digests.hashed == hashed and memo.digests.reused > 0  # nothing re-read
    assert memo.ledger.ok == RunDir.open(path).ledger.size()
    return memo


EDIT_IN_PLACE = textwrap.dedent("""
    # Same size, then the mode and the mtime put back: only the ctime moves.
    import os, sys
    p = sys.argv[1]
    st = os.stat(p)
    os.chmod(p, 0o644)
    data = bytearray(open(p, "rb").read())
    data[0] ^= 1
    with open(p, "r+b") as fh:
        fh.write(data)
    os.chmod(p, st.st_mode)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
""")

SWAP_IN = textwrap.dedent("""
    # A file prepared before the audits (its ctime is old), renamed over the blob, mtime copied.
    import os, sys
    p, prepared = sys.argv[1], sys.argv[2]
    st = os.stat(p)
    os.utime(prepared, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(prepared, p)
""")


@pytest.mark.parametrize("attack", ["edit_in_place", "swap_in"])
def test_an_artifact_changed_between_two_verifications_is_named_by_the_second(tmp_path, key_dir, settle, attack):
    path = tmp_path / "run"
    make_run(path, events=6).close()
    blob = _blob(path)
    prepared = tmp_path / "prepared"
    data = bytearray(blob.read_bytes())
    data[0] ^= 1
    prepared.write_bytes(bytes(data))
    settle()
    memo = _primed(path)
    script = EDIT_IN_PLACE if attack == "edit_in_place" else SWAP_IN
    as_agent(script, blob, prepared, scratch=tmp_path / "agent")
    report = verify_run(path, memo=memo)
    digest = blob.parent.name + blob.name
    assert [str(p) for p in report.problems] == [
        f"artifact {digest}: content does not match its digest (file modified)"
    ]
    assert report.problems == verify_run(path).problems


MAP_AND_WAIT = textwrap.dedent("""
    # Map the blob writable and dirty its page with its own bytes (ctime moves now, once), then
    # change it through the mapping after the verifier has measured it: no ctime update.
    import mmap, os, sys
    p = sys.argv[1]
    mode = os.stat(p).st_mode
    os.chmod(p, 0o644)
    fd = os.open(p, os.O_RDWR)
    m = mmap.mmap(fd, 0)
    os.close(fd)
    os.chmod(p, mode)
    m[0:1] = m[0:1]
    print("mapped", flush=True)
    sys.stdin.readline()
    m[0] ^= 1
    m.close()
""")


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_SETLEASE"), reason="Linux file leases")
def test_an_artifact_changed_through_a_writable_mapping_is_named(tmp_path, key_dir, settle):
    path = tmp_path / "run"
    make_run(path, events=6).close()
    blob = _blob(path)
    settle()
    memo = _primed(path)
    with subprocess.Popen(
        [sys.executable, "-c", MAP_AND_WAIT, str(blob)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as agent:
        assert agent.stdin is not None and agent.stdout is not None
        assert agent.stdout.readline().strip() == "mapped"
        time.sleep(0.1)  # the dirtying write's ctime settles too
        assert verify_run(path, memo=memo).ok  # measured while mapped: not remembered
        agent.stdin.write("go\n")
        agent.stdin.flush()
        assert agent.wait(timeout=30) == 0
    report = verify_run(path, memo=memo)
    digest = blob.parent.name + blob.name
    assert [str(p) for p in report.problems] == [
        f"artifact {digest}: content does not match its digest (file modified)"
    ]


@pytest.mark.parametrize("attack", ["rewrite_early_row", "rollback"])
def test_a_ledger_changed_between_two_verifications_is_named_by_the_second(tmp_path, key_dir, settle, attack):
    path = tmp_path / "run"
    make_run(path, events=9, checkpoint_every=4).close()
    scratch = tmp_path / "agent"
    scratch.mkdir()
    shutil.copy(path / "ledger.db", scratch / "old.db")  # kept by the agent
    with RunDir.open(path, writable=True) as run:
        run.record_many([draft(100 + i) for i in range(5)])
    settle()
    memo = _primed(path)
    if attack == "rewrite_early_row":
        as_agent(REWRITE, path / "ledger.db", 1, scratch=scratch)
    else:
        as_agent(COPY, scratch / "old.db", path / "ledger.db", scratch=scratch)
        drop_wal(path)
    report = verify_run(path, memo=memo)
    assert not report.ok
    says = "history rewritten" if attack == "rewrite_early_row" else "covers 14 events, the ledger has 9"
    assert any(says in str(p) for p in report.problems), report.problems
    assert report.problems == verify_run(path).problems


TREE_ATTACK = textwrap.dedent("""
    # A stored directory (a checkpoint) changed by the agent: its tree or its manifest blob.
    import os, sys
    attack, tree, manifest = sys.argv[1], sys.argv[2], sys.argv[3]
    os.chmod(tree, 0o755)
    if attack == "add_file":
        with open(os.path.join(tree, "extra"), "wb") as fh:
            fh.write(b"smuggled")
    elif attack == "remove_file":
        os.unlink(os.path.join(tree, "cfg"))
    elif attack == "replace_file":  # other bytes of the same size, mtime put back
        p = os.path.join(tree, "cfg")
        st = os.stat(p)
        os.unlink(p)
        with open(p, "wb") as fh:
            fh.write(b"CONFIG")
        os.chmod(p, st.st_mode)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif attack == "edit_manifest":  # one byte of the manifest blob, same size, mtime put back
        st = os.stat(manifest)
        os.chmod(manifest, 0o644)
        data = bytearray(open(manifest, "rb").read())
        data[0] ^= 1
        with open(manifest, "r+b") as fh:
            fh.write(data)
        os.chmod(manifest, st.st_mode)
        os.utime(manifest, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.chmod(tree, 0o555)
""")


@pytest.mark.parametrize("attack", ["add_file", "remove_file", "replace_file", "edit_manifest"])
def test_a_stored_directory_changed_between_two_verifications_is_named_by_the_second(tmp_path, key_dir, settle, attack):
    """The memo keeps each stored directory's parsed manifest (by its digest) and the digests of
    its files; an agent's change to the tree or to the manifest blob is still named."""
    path = tmp_path / "run"
    src = tmp_path / "ckpt"
    src.mkdir()
    (src / "w.bin").write_bytes(b"weights")
    (src / "cfg").write_bytes(b"config")
    with make_run(path, events=4) as run:
        d = run.store.put_dir(src)
        run.record({**draft(9), "artifacts": [{"digest": d, "role": "output"}]})
        tree = run.store.path(d)
    settle()
    memo = _primed(path)
    manifest = path / "artifacts" / "objects" / d[:2] / d[2:]
    as_agent(TREE_ATTACK, attack, tree, manifest, scratch=tmp_path / "agent")
    report = verify_run(path, memo=memo)
    says = {
        "add_file": f"artifact {d}: file extra was added to the stored directory",
        "remove_file": f"artifact {d}: file cfg was removed from the stored directory",
        "replace_file": f"artifact {d}: file cfg does not match the manifest (modified)",
        "edit_manifest": f"artifact {d}: content does not match its digest (file modified)",
    }[attack]
    assert says in [str(p) for p in report.problems], report.problems
    assert report.problems == verify_run(path).problems
