"""The ledger's reliability on both backends, SQLite (the run directory's file) and PostgreSQL
(a run's schema, written as a role that may only insert and select): many writers, writers
killed mid-append, tampering, refused updates and deletes, rollback, and export."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from rsi_master.errors import LedgerError
from rsi_master.rundir import RunDir, export_run, verify_run
from tests.helpers import draft

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    """None for SQLite, else the cluster (its writer URL is what runs are given)."""
    return request.getfixturevalue("postgres") if request.param == "postgresql" else None


def _new_run(path, pg, **kw) -> RunDir:
    return RunDir.create(path, ledger=pg.writer_url if pg else None, **kw)


def _admin(pg, run: RunDir):
    import psycopg

    conn = psycopg.connect(pg.admin_url, autocommit=True)
    conn.execute("SELECT set_config('search_path', %s, false)", ('"' + run.run_id + '"',))
    return conn


def _writer(run_dir: str, key_dir: str, worker: int, n: int) -> None:
    os.environ["RSI_MASTER_KEY_DIR"] = key_dir
    with RunDir.open(run_dir, writable=True, checkpoint_every=250) as run:
        for i in range(n):
            run.record(draft(i, actor=f"w{worker}"))


# 500 each is the reliability figure (about 15 to 30 s); 60 each keeps the default run fast.
@pytest.mark.parametrize("n", [60, pytest.param(500, marks=[pytest.mark.slow, pytest.mark.scale])])
def test_four_writers_append_without_gap_or_duplicate(tmp_path, key_dir, backend, n):
    _new_run(tmp_path / "run", backend).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path / "run"), str(key_dir), w, n)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with RunDir.open(tmp_path / "run") as run:
        events = list(run.ledger.events())
    assert [e.seq for e in events] == list(range(4 * n))
    seen = {(e.actor.id, e.payload["i"]) for e in events}
    assert seen == {(f"w{w}", i) for w in range(4) for i in range(n)}
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
            run.record_many([{"kind": "test.batch", "actor": {"role": "worker", "id": "k"},
                              "payload": {"round": int(round_), "batch": b, "j": j, "n": n}} for j in range(n)])
            if b == 0:
                print("appending", flush=True)
            b += 1
""")


@pytest.mark.heavy
def test_sigkill_mid_append_never_leaves_a_partial_batch(tmp_path, key_dir, backend):
    run_dir = tmp_path / "run"
    _new_run(run_dir, backend).close()
    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(key_dir)}
    for round_ in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", _KILLED_WRITER, str(run_dir), str(round_)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline() == "appending\n"
        time.sleep(0.05 + 0.04 * round_)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    with RunDir.open(run_dir) as run:
        batches: dict[tuple[int, int], list[int]] = {}
        for e in run.ledger.events():
            batches.setdefault((e.payload["round"], e.payload["batch"]), []).append(e.payload["j"])
    assert len(batches) > 6
    for (r, b), js in batches.items():
        assert js == list(range(1 + b % 7)), f"batch {b} of round {r} is partial: {js}"
    assert verify_run(run_dir).ok
    with RunDir.open(run_dir, writable=True) as run:  # a writer that reopens signs the unsigned tail
        run.ledger.checkpoint()
    assert verify_run(run_dir).unsigned_tail == 0


def _make(tmp_path, backend, n=20) -> RunDir:
    run = _new_run(tmp_path / "run", backend, checkpoint_every=5)
    run.record_many([draft(i) for i in range(n)])
    return run


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE events SET kind = 'x' WHERE seq = 3",
        "DELETE FROM events WHERE seq = 19",
        "DELETE FROM checkpoints",
        "UPDATE seal SET tree_size = 1",
    ],
)
def test_the_database_refuses_updates_and_deletes(tmp_path, backend, sql):
    run = _make(tmp_path, backend)
    run.close()
    if backend is None:
        conn = sqlite3.connect(tmp_path / "run" / "ledger.db", isolation_level=None)
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(sql)
    else:
        import psycopg

        # As the run's writer role: no right to update or delete (the seal: forward only).
        with psycopg.connect(backend.writer_url, autocommit=True) as writer:
            writer.execute("SELECT set_config('search_path', %s, false)", ('"' + run.run_id + '"',))
            with pytest.raises((psycopg.errors.InsufficientPrivilege, psycopg.errors.IntegrityConstraintViolation)):
                writer.execute(sql)
        # As the owner, superuser even: the triggers refuse.
        with _admin(backend, run) as admin:
            with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match=r"append-only|only moves forward"):
                admin.execute(sql)
            with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="append-only"):
                admin.execute("TRUNCATE events CASCADE")
    assert verify_run(tmp_path / "run").ok


def test_a_single_byte_edit_of_an_event_is_named_by_verify(tmp_path, backend):
    run = _make(tmp_path, backend)
    run.close()
    if backend is None:
        conn = sqlite3.connect(tmp_path / "run" / "ledger.db", isolation_level=None)
        conn.execute("DROP TRIGGER events_no_update")
        conn.execute(
            "UPDATE events SET body = CAST(replace(CAST(body AS TEXT), '\"i\":7', '\"i\":8') AS BLOB) WHERE seq = 7"
        )
    else:
        with _admin(backend, run) as admin:
            admin.execute("ALTER TABLE events DISABLE TRIGGER events_no_change")
            admin.execute(
                "UPDATE events SET body = set_byte(body, position('\"i\":7'::bytea IN body) + 3, 56) WHERE seq = 7"
            )
            admin.execute("ALTER TABLE events ENABLE ALWAYS TRIGGER events_no_change")  # only the bytes differ
    problems = [str(p) for p in verify_run(tmp_path / "run").problems]
    assert any(p.startswith("event 7: hash does not match") for p in problems), problems


def test_a_disabled_trigger_is_named_by_verify(tmp_path, postgres):
    run = _make(tmp_path, postgres)
    run.close()
    with _admin(postgres, run) as admin:
        admin.execute("ALTER TABLE events DISABLE TRIGGER events_no_change")
    problems = [str(p) for p in verify_run(tmp_path / "run").problems]
    assert problems == ["schema trigger events_no_change: missing or altered (append-only protection removed?)"]


def test_a_restored_older_dump_is_named_by_verify_and_refused_by_writers(tmp_path, postgres):
    run = _make(tmp_path, postgres, n=10)
    dump = tmp_path / "old.sql"
    subprocess.run([f"{postgres.bin_dir}/pg_dump", "-n", run.run_id, "-f", dump, postgres.admin_url], check=True)
    run.record_many([draft(i) for i in range(10, 30)])
    run.close()
    with _admin(postgres, run) as admin:
        admin.execute(f'DROP SCHEMA "{run.run_id}" CASCADE')
    subprocess.run(
        [f"{postgres.bin_dir}/psql", "-q", "-v", "ON_ERROR_STOP=1", "-f", dump, postgres.admin_url],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    problems = [str(p) for p in verify_run(tmp_path / "run").problems]
    assert any("rolled back or truncated" in p for p in problems), problems
    with pytest.raises(LedgerError, match="rolled back or truncated"):
        RunDir.open(tmp_path / "run", writable=True)


def test_export_writes_a_run_directory_that_verifies_on_its_own(tmp_path, backend, key_dir):
    run = _make(tmp_path, backend)
    run.store.put_bytes(b"an artifact")
    run.close()
    out = export_run(tmp_path / "run", tmp_path / "copy")
    assert (out / "ledger.db").is_file()
    report = verify_run(out, checkpoint=out / "witness.json")
    assert report.ok, report.problems
    assert report.ledger.events == 20 and report.artifacts == 1
    with RunDir.open(out) as copy, RunDir.open(tmp_path / "run") as orig:
        assert [e.hash for e in copy.ledger.events()] == [e.hash for e in orig.ledger.events()]


_FORGE_AS_WRITER = textwrap.dedent("""
    import sys, psycopg
    from rsi_master.ledger._event import EventDraft, seal
    url, schema = sys.argv[1:]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT set_config('search_path', %s, false)", ('"' + schema + '"',))
        seq, prev = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        draft = EventDraft.model_validate({"kind": "eval.record", "actor": {"role": "harness", "id": "orchestra"},
                                           "payload": {"score": 1.0}})
        event, body = seal(draft, seq=seq + 1, ts="2030-01-01T00:00:00.000000Z", prev_hash=prev)
        conn.execute("INSERT INTO events VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                     (seq + 1, prev, event.hash, event.kind, "harness", "orchestra", event.ts, body))
    print("forged")
""")


def test_a_tail_forged_by_another_process_with_the_writer_role_is_named_and_refused(tmp_path, postgres):
    run = _make(tmp_path, postgres)
    run.close()
    # An agent that got hold of the writer role's URL: the chain trigger lets a correct chain in.
    out = subprocess.run(
        [sys.executable, "-c", _FORGE_AS_WRITER, postgres.writer_url, run.run_id], capture_output=True, text=True
    )
    assert out.stdout == "forged\n", out.stderr
    problems = [str(p) for p in verify_run(tmp_path / "run").problems]
    assert any(p.startswith("event 20: events 20..20 are not covered by the signed head") for p in problems), problems
    with pytest.raises(LedgerError, match="not covered by the signed head"):
        RunDir.open(tmp_path / "run", writable=True)
