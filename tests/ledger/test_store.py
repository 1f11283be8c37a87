"""The ledger's write discipline: append-only in the database, atomic batches, no forks,
many writers, and writers killed mid-append."""

from __future__ import annotations

import hashlib
import itertools
import json
import multiprocessing as mp
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from rsi_master.errors import LedgerError, MalformedEventError, NotARunError
from rsi_master.ledger import Ledger, SignedCheckpoint
from rsi_master.rundir import RunDir, verify_run
from tests.helpers import draft, make_run


def test_append_and_read_back(tmp_path):
    with make_run(tmp_path / "run", events=7) as run:
        events = list(run.ledger.events())
        assert [e.seq for e in events] == list(range(7))
        assert all(e.prev_hash == p.hash for p, e in itertools.pairwise(events))
        assert [e.seq for e in run.ledger.events(kinds=["test.*"], actor_id="w1", since=3)] == [3, 4, 5, 6]
        assert run.ledger.get(2).payload == {"i": 2}


def test_rows_after_a_position_with_bodies_only_where_asked(tmp_path):
    from rsi_master.ledger import hash_at, rows_since

    with make_run(tmp_path / "run", events=7) as run:
        events = list(run.ledger.events())
        rows = rows_since(run.ledger, 3)
        assert [r.seq for r in rows] == [3, 4, 5, 6] and [r.event() for r in rows] == events[3:]
        assert [r.seq for r in rows_since(run.ledger, 2, until=4)] == [2, 3] and rows_since(run.ledger, 7) == []
        light = rows_since(run.ledger, 0, bodies=())
        assert [r.hash for r in light] == [e.hash for e in events] and {r.body for r in light} == {None}
        with pytest.raises(ValueError, match="not read"):
            light[0].event()
        assert hash_at(run.ledger, 6) == events[6].hash and hash_at(run.ledger, 7) is None


def test_a_batch_is_all_or_nothing(tmp_path):
    with make_run(tmp_path / "run", events=3) as run:
        with pytest.raises(MalformedEventError):
            run.record_many([draft(10), draft(11), {"kind": "BAD", "actor": {"role": "w", "id": "x"}}])
        assert run.ledger.size() == 3
        run.record_many([draft(10), draft(11)])
        assert run.ledger.size() == 5


def test_reference_to_a_missing_artifact_writes_nothing(tmp_path):
    from rsi_master.errors import ArtifactError

    with make_run(tmp_path / "run", events=2) as run:
        with pytest.raises(ArtifactError, match="not in the store"):
            run.record({**draft(), "artifacts": [{"digest": "a" * 64, "role": "input"}]})
        assert run.ledger.size() == 2


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE events SET kind = 'x' WHERE seq = 1",
        "DELETE FROM events WHERE seq = 4",
        "UPDATE checkpoints SET root = 'x'",
        "DELETE FROM checkpoints",
        "DELETE FROM artifact_refs",
        "UPDATE meta SET value = 'other' WHERE key = 'run_id'",
    ],
)
def test_database_refuses_updates_and_deletes(tmp_path, sql):
    make_run(tmp_path / "run", events=6).close()
    conn = sqlite3.connect(tmp_path / "run" / "ledger.db")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute(sql)
    conn.close()


def test_database_refuses_forks_and_gaps(tmp_path):
    make_run(tmp_path / "run", events=6).close()
    conn = sqlite3.connect(tmp_path / "run" / "ledger.db")
    row = conn.execute("SELECT * FROM events WHERE seq = 5").fetchone()
    # A second child of event 4 (a fork), and an event after a gap: both refused.
    for seq, prev in ((5, row[1]), (7, row[2]), (6, "f" * 64)):
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (seq, prev, "e" * 64, *row[3:]))
    conn.close()


def test_checkpoints_are_signed_periodically_and_on_close(tmp_path):
    run = make_run(tmp_path / "run", events=10, checkpoint_every=4)
    # Checkpoint 0, signed at creation, pins the run id and the key from the start.
    assert [c.checkpoint.tree_size for c in run.ledger.checkpoints()] == [0, 4, 8]
    run.close()
    reopened = RunDir.open(tmp_path / "run")
    assert [c.checkpoint.tree_size for c in reopened.ledger.checkpoints()] == [0, 4, 8, 10]
    assert all(c.valid_for(reopened.ledger.public_pem.encode()) for c in reopened.ledger.checkpoints())


def test_read_only_open_refuses_writes(tmp_path):
    make_run(tmp_path / "run").close()
    with RunDir.open(tmp_path / "run") as run, pytest.raises(LedgerError, match="read-only"):
        run.record(draft())


def test_foreign_sqlite_file_is_not_a_ledger(tmp_path):
    conn = sqlite3.connect(tmp_path / "other.db")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(NotARunError, match="not an RSI-Master ledger"):
        Ledger.open(tmp_path / "other.db")
    (tmp_path / "junk.db").write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(NotARunError):
        Ledger.open(tmp_path / "junk.db")


def _writer(run_dir: str, key_dir: str, worker: int, n: int) -> None:
    os.environ["RSI_MASTER_KEY_DIR"] = key_dir
    with RunDir.open(run_dir, writable=True, checkpoint_every=250) as run:
        for i in range(n):
            run.record(draft(i, actor=f"w{worker}"))


@pytest.mark.heavy
def test_four_processes_append_500_each(tmp_path, key_dir):
    RunDir.create(tmp_path / "run").close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path / "run"), str(key_dir), w, 500)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with RunDir.open(tmp_path / "run") as run:
        seen = [(e.actor.id, e.payload["i"]) for e in run.ledger.events()]
    assert len(seen) == 2000 and len(set(seen)) == 2000
    assert set(seen) == {(f"w{w}", i) for w in range(4) for i in range(500)}
    report = verify_run(tmp_path / "run")
    assert report.ok, report.problems
    assert report.unsigned_tail == 0


_KILLED_WRITER = textwrap.dedent("""
    import sys
    from rsi_master.rundir import RunDir
    round_, = sys.argv[2:]
    with RunDir.open(sys.argv[1], writable=True, checkpoint_every=50) as run:
        b = 0
        while True:
            n = 1 + b % 7
            digest = run.store.put_bytes(f"r{round_} b{b}".encode() * 1000)
            run.record_many([{"kind": "test.batch", "actor": {"role": "worker", "id": "k"},
                              "payload": {"round": int(round_), "batch": b, "j": j, "n": n},
                              "artifacts": [{"digest": digest, "role": "output"}]} for j in range(n)])
            if b == 0:
                print("appending", flush=True)  # killed only once it is really writing
            b += 1
""")


@pytest.mark.heavy
def test_sigkill_mid_append_never_leaves_a_partial_event(tmp_path, key_dir):
    run_dir = tmp_path / "run"
    RunDir.create(run_dir).close()
    rng = random.Random(7)
    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(key_dir)}
    for round_ in range(20):
        proc = subprocess.Popen(
            [sys.executable, "-c", _KILLED_WRITER, str(run_dir), str(round_)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline() == "appending\n"
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        conn = sqlite3.connect(run_dir / "ledger.db")
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
    with RunDir.open(run_dir) as run:
        batches: dict[tuple[int, int], list[int]] = {}
        for e in run.ledger.events():
            batches.setdefault((e.payload["round"], e.payload["batch"]), []).append(e.payload["j"])
        assert len(batches) > 20
        for (r, b), js in batches.items():
            assert js == list(range(1 + b % 7)), f"batch {b} of round {r} is partial: {js}"
    report = verify_run(run_dir)
    assert report.ok, report.problems
    # The killed writers never closed; a writer that reopens signs the unsigned tail.
    with RunDir.open(run_dir, writable=True) as run:
        run.ledger.checkpoint()
    assert verify_run(run_dir).unsigned_tail == 0


# -- a live writer against an agent editing the database under it ------------------------------
def test_a_live_writer_refuses_a_tail_forged_under_it(tmp_path, key_dir):
    from tests.ledger.attacks import FORGE_TAIL, as_agent

    run = make_run(tmp_path / "run", events=4, checkpoint_every=1000)
    as_agent(FORGE_TAIL, tmp_path / "run" / "ledger.db", 1, scratch=tmp_path / "agent")
    with pytest.raises(LedgerError, match=r"events 4\.\.4 are not covered"):
        run.record(draft(5))
    with pytest.raises(LedgerError, match="not covered"):
        run.close()  # nor does closing sign the forged event
    witness = SignedCheckpoint.load(key_dir / "witness" / f"{run.run_id}.json")
    assert witness.checkpoint.tree_size == 4


def test_a_live_writer_refuses_a_ledger_rolled_back_under_it(tmp_path):
    from tests.ledger.attacks import DROP_LAST, as_agent

    run = make_run(tmp_path / "run", events=4, checkpoint_every=1000)
    as_agent(DROP_LAST, tmp_path / "run" / "ledger.db", scratch=tmp_path / "agent")
    with pytest.raises(LedgerError, match="shrank under this writer"):
        run.record(draft(5))
    run.ledger.connection.close()


def test_the_witness_moves_only_along_a_consistency_proof(tmp_path, key_dir):
    from rsi_master.ledger import Checkpoint, KeyDir, utc_now

    run = make_run(tmp_path / "run", events=4, checkpoint_every=1000)
    path = key_dir / "witness" / f"{run.run_id}.json"
    # A witness at 3 events of another history, validly signed (say, an operator's mistake).
    signer = KeyDir(key_dir).default()
    other = Checkpoint(run_id=run.run_id, tree_size=3, root="ab" * 32, ts=utc_now(), key_id=signer.key_id)
    SignedCheckpoint.sign(other, signer).dump(path)
    before = path.read_bytes()
    with pytest.raises(LedgerError, match="does not extend the operator's witness at 3 events; witness kept"):
        run.record(draft(4))
    assert path.read_bytes() == before
    run.ledger.connection.close()
    with pytest.raises(LedgerError, match="history differs from the operator's witness at 3 events"):
        RunDir.open(tmp_path / "run", writable=True)


def _signed_witness(key_dir, run_id: str, size: int, root: str) -> bytes:
    from rsi_master.ledger import Checkpoint, KeyDir, utc_now

    signer = KeyDir(key_dir).default()
    cp = Checkpoint(run_id=run_id, tree_size=size, root=root, ts=utc_now(), key_id=signer.key_id)
    return SignedCheckpoint.sign(cp, signer).model_dump_json().encode()


@pytest.mark.parametrize(
    "attack,refused",
    [
        ("flip-signature", "does not verify under this run's key"),
        ("junk", "is not a signed RSI-Master checkpoint"),
        ("other-history-behind", "does not extend the operator's witness at 3 events; witness kept"),
        ("other-history-at-the-head", "has another root than this writer's head"),
        ("other-history-ahead", None),  # kept, as a second writer's would be; reopening refuses
        ("older-witness", None),  # a witness behind of this history: moved forward from it
        ("deleted", "witness .* is missing"),
    ],
)
def test_a_live_writer_reads_a_witness_changed_between_two_appends(tmp_path, key_dir, attack, refused):
    """The writer skips parsing and verifying the witness only while the file holds exactly the
    bytes it wrote: one edited in place with its size and times kept, replaced or rolled back by
    another process is read and checked as a fresh writer would."""
    from tests.ledger.attacks import EDIT_IN_PLACE, as_agent

    run = make_run(tmp_path / "run", events=3, checkpoint_every=1000)
    path = key_dir / "witness" / f"{run.run_id}.json"
    older = path.read_bytes()  # at 3 events
    run.record(draft(3))  # the writer has written and remembers the witness at 4
    source = tmp_path / "source.json"
    if attack == "junk":
        source.write_bytes(b"x" * len(path.read_bytes()))
    elif attack.startswith("other-history"):
        size = {"behind": 3, "at-the-head": 5, "ahead": 9}[attack.removeprefix("other-history-")]
        source.write_bytes(_signed_witness(key_dir, run.run_id, size, "ab" * 32))
    elif attack == "older-witness":
        source.write_bytes(older)
    if attack == "deleted":
        path.unlink()
    else:
        as_agent(
            EDIT_IN_PLACE, path, "flip-signature" if attack == "flip-signature" else source, scratch=tmp_path / "a"
        )
    planted = path.read_bytes() if path.exists() else None
    if refused is not None:
        with pytest.raises(LedgerError, match=refused):
            run.record(draft(4))
        assert (path.read_bytes() if path.exists() else None) == planted  # the witness is kept as found
        run.ledger.connection.close()
        return
    run.record(draft(4))
    run.close()
    if attack == "older-witness":
        assert SignedCheckpoint.load(path).checkpoint.tree_size == 5
        assert verify_run(tmp_path / "run").ok
    else:
        assert path.read_bytes() == planted
        with pytest.raises(LedgerError, match="witness covers 9 events, the ledger has 5"):
            RunDir.open(tmp_path / "run", writable=True)


def test_a_run_written_without_fsync_swaps_its_witness_in_and_verifies(tmp_path, key_dir):
    from rsi_master import _durable
    from rsi_master.ledger._files import write_bytes_atomic

    with _durable.not_durable():
        target = tmp_path / "d" / "f.json"
        for data in (b"first", b"second, longer", b"third"):
            write_bytes_atomic(target, data)  # the first renames, the others exchange
            assert target.read_bytes() == data
        assert os.listdir(target.parent) == ["f.json"]  # no temporary file left
        run = make_run(tmp_path / "run", events=6, checkpoint_every=4)
        run.close()
    witness = SignedCheckpoint.load(key_dir / "witness" / f"{run.run_id}.json")
    assert witness.checkpoint.tree_size == 6 and witness.compact_range() is not None
    assert sorted(os.listdir(key_dir / "witness")) == [f"{run.run_id}.json", f"{run.run_id}.lock"]
    assert verify_run(tmp_path / "run").ok


def _mth(leaves: list[bytes]) -> bytes:
    """RFC 6962 section 2.1, written from the RFC and nothing else: MTH({}) = SHA-256(),
    MTH({d0}) = SHA-256(0x00 || d0), MTH(D[n]) = SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n]))
    with k the largest power of two smaller than n."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + _mth(leaves[:k]) + _mth(leaves[k:])).digest()


def test_signed_roots_are_rfc6962_tree_heads_over_the_event_hashes(tmp_path, key_dir):
    """An independent RFC 6962 implementation, given the 32-byte event hashes as leaf data,
    gets every signed root: kept checkpoints, the seal and the operator's witness."""
    make_run(tmp_path / "run", events=13, checkpoint_every=4).close()
    conn = sqlite3.connect(tmp_path / "run" / "ledger.db")
    data = [bytes.fromhex(h) for (h,) in conn.execute("SELECT hash FROM events ORDER BY seq")]
    signed = [json.loads(b) for (b,) in conn.execute("SELECT body FROM checkpoints ORDER BY tree_size")]
    signed.append(json.loads(conn.execute("SELECT body FROM seal").fetchone()[0]))
    conn.close()
    run_id = signed[0]["run_id"]
    signed.append(json.loads((key_dir / "witness" / f"{run_id}.json").read_text())["checkpoint"])
    assert [c["tree_size"] for c in signed] == [0, 4, 8, 12, 13, 13, 13]
    for c in signed:
        assert c["version"] == 2
        assert c["root"] == _mth(data[: c["tree_size"]]).hex(), c
    assert signed[0]["root"] == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_a_writer_refuses_an_event_hash_edited_to_upper_case(tmp_path):
    make_run(tmp_path / "run", events=3).close()
    conn = sqlite3.connect(tmp_path / "run" / "ledger.db", isolation_level=None)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events_no_update'").fetchone()[0]
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute("UPDATE events SET hash = upper(hash) WHERE seq = 2")
    conn.execute(sql)
    conn.close()
    with pytest.raises(LedgerError, match="not lower-case hex"):
        RunDir.open(tmp_path / "run", writable=True)
    assert "hash does not match" in str(verify_run(tmp_path / "run").problems[0])
