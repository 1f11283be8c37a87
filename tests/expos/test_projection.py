"""The projection: folded once, then from new events only, and the same state either way."""

from __future__ import annotations

import dataclasses
import random
import sqlite3
import subprocess
import sys

import pytest

from rsi_master.errors import LedgerError
from rsi_master.expos import Caller, ExpOS, Projection, load_state
from rsi_master.orchestra import load_graph
from rsi_master.orchestra._graph import ORCHESTRA, OrchestraPart
from tests.helpers import v1_run

MAIN = Caller("main", "main")


@pytest.fixture
def run(tmp_path):
    """A run with a graph and a scheduler's records (no training: the projection reads events)."""
    x = ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=4)
    x.record(
        ORCHESTRA,
        "orchestra.start",
        {
            "version": 1,
            "task": "arithmetic",
            "budget_s": 100.0,
            "slots": 2,
            "main": "policy",
            "reviewer": "evidence",
            "eval_limit": 4,
        },
    )
    x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "t1", "direction": {"family": "answer_only"}})
    x.call(MAIN, "worker.add", {"worker_id": "w2", "task": "t2", "predecessors": ["w1"]})
    job = x.record(ORCHESTRA, "orchestra.job.start", {"node": "w1", "kind": "worker", "slot": 0})
    x.record(
        ORCHESTRA,
        "orchestra.job.end",
        {"start_seq": job.seq, "node": "w1", "status": "done", "end_ts": 2e9, "seconds": 1.0},
    )
    x.call(Caller("worker", "w1"), "worker.finalize", {"summary": "nothing yet"})
    yield x
    x.close()


def _dump(proj: Projection) -> dict:
    orc = proj.part(OrchestraPart)
    return {
        "state": dataclasses.asdict(proj.state),
        "size": proj.size,
        "last_ts": proj.last_ts,
        "orchestra": {k: v for k, v in vars(orc).items() if not k.startswith("_")},
    }


def test_folding_in_random_chunks_gives_the_state_of_one_fold(tmp_path, monkeypatch):
    """On the committed run (a real `start_run`: 80 events, schema v1): any chunking, one state."""
    import rsi_master.expos._projection as projection

    run_dir, key_dir = v1_run(tmp_path)
    with ExpOS.open(run_dir, key_dir=key_dir, writable=False) as x:
        whole = Projection(x.run.ledger)
        whole.advance()
        assert whole.size == x.run.ledger.size() == 80 and whole.unreadable == []
        st, orc = whole.state, whole.part(OrchestraPart)
        # What the run holds, so that the comparison below compares something.
        assert len(st.experiments) == 4 and len(st.workers) == 2 and st.reviewers and st.decisions
        assert st.submissions and st.datasets and all(x.evals for x in st.experiments.values())
        assert orc.sessions and orc.jobs and orc.stopped is not None and orc.finished is not None
        for seed in range(5):
            rng = random.Random(seed)
            chunked = Projection(x.run.ledger)
            while chunked.size < whole.size:
                chunked.advance(until=chunked.size + rng.randint(1, 12))
            assert _dump(chunked) == _dump(whole)
        monkeypatch.setattr(projection, "_SLICE", 7)  # one advance, read in slices of 7 rows
        sliced = Projection(x.run.ledger)
        assert sliced.advance() == whole.size and sliced.rows_read == whole.size
        assert _dump(sliced) == _dump(whole)


def test_a_part_attached_late_catches_up(run):
    import rsi_master.expos._projection as projection

    registered = list(projection._PARTS)
    projection._PARTS.clear()  # a process that made its projection before importing orchestra
    try:
        late = Projection(run.run.ledger)
        late.advance()
        assert OrchestraPart not in late._parts
    finally:
        projection._PARTS[:] = registered
    whole = Projection(run.run.ledger)
    whole.advance()
    assert _dump(late) == _dump(whole)


def test_advance_takes_in_events_another_process_appended(run):
    st = load_state(run.reader)
    assert "w9" not in st.workers
    code = (
        "import sys; from rsi_master.expos import Caller, ExpOS\n"
        "with ExpOS.open(sys.argv[1]) as x:\n"
        "    x.call(Caller('main', 'main'), 'worker.add', {'worker_id': 'w9', 'task': 'from elsewhere'})\n"
    )
    subprocess.run([sys.executable, "-c", code, str(run.run.path)], check=True, timeout=120)
    assert load_state(run.reader).workers["w9"].task == "from elsewhere"
    assert load_graph(run.reader).pending() == [("worker", "w2"), ("worker", "w9")]
    assert run.projection().size == run.run.ledger.size()


def test_a_poll_with_no_new_events_reads_no_rows(run):
    proj = run.projection()
    read = proj.rows_read
    for _ in range(3):
        assert proj.advance() == 0
    load_state(run.reader)
    load_graph(run.reader)
    assert proj.rows_read == read
    run.call(MAIN, "graph.read")  # one tool call: its own tool.call record is the one new row
    assert run.projection().rows_read == read + 1


def test_one_projection_per_session_and_state_is_shared(run):
    assert load_state(run.reader) is load_state(run.reader) is run.projection().state
    g1, g2 = load_graph(run.reader), load_graph(run.reader)
    assert g1 is not g2 and g1.workers is not g2.workers  # snapshots: a Main may add to its own
    g1.workers.clear()
    assert set(load_graph(run.reader).workers) == {"w1", "w2"}


def test_a_rewritten_history_is_refused_not_read(run):
    proj = run.projection()
    last = proj.size - 1
    with sqlite3.connect(run.run.path / "ledger.db") as conn:
        conn.execute("DROP TRIGGER events_no_update")
        conn.execute("UPDATE events SET hash = ? WHERE seq = ?", ("f" * 64, last))
    with pytest.raises(LedgerError, match="no longer the one this session read"):
        proj.advance()


def _append_around_the_key(run, kind: str, payload: dict) -> None:
    """A row appended with plain SQL and a recomputed chain, as an agent with file access could."""
    from rsi_master.ledger._event import EventDraft, seal

    with sqlite3.connect(run.run.path / "ledger.db", isolation_level=None) as conn:
        seq, prev = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        draft = EventDraft.model_validate({"kind": kind, "actor": {"role": "main", "id": "main"}, "payload": payload})
        event, body = seal(draft, seq=seq + 1, ts="2030-01-01T00:00:00.000000Z", prev_hash=prev)
        conn.execute(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (seq + 1, prev, event.hash, event.kind, "main", "main", event.ts, body),
        )


def test_vouching_covers_every_event_the_projection_read(run):
    proj = run.projection()
    assert proj.vouch() == proj.size
    # Folded like any row, but vouching refuses it: the signed head does not cover it.
    _append_around_the_key(run, "candidate.nominate", {"experiment_id": "exp-99999"})
    assert proj.advance() == 1 and proj.state.nominations[-1][0] == "exp-99999"
    with pytest.raises(LedgerError, match="not covered by the signed head"):
        proj.vouch()
    with pytest.raises(LedgerError, match="not covered by the signed head"):  # nor signs them on close
        run.close()


def test_a_payload_no_writer_could_record_is_listed_not_folded(run):
    proj = run.projection()
    before = len(proj.state.decisions)
    _append_around_the_key(run, "decision.record", {"action": "stop"})  # no rationale, evidence, detail
    assert proj.advance() == 1
    assert proj.unreadable == [proj.size - 1] and len(proj.state.decisions) == before
    assert proj.advance() == 0 and proj.size == run.run.ledger.size()  # and it reads on from there
    with pytest.raises(LedgerError, match="not covered by the signed head"):
        run.close()


def test_scheduler_records_by_anyone_but_the_harness_are_not_folded(run):
    run.record({"role": "worker", "id": "w1"}, "orchestra.stop", {"reason": "forged", "spent_s": 1.0})
    assert load_graph(run.reader).stopped is None
    run.record(ORCHESTRA, "orchestra.stop", {"reason": "budget spent", "spent_s": 1.0})
    assert load_graph(run.reader).stopped.payload.reason == "budget spent"


# -- a fold shared by the sessions of one process (the inline executor's nodes) ----------------


def _open(run, pool, **kw) -> ExpOS:
    return ExpOS.open(run.run.path, projections=pool, writable=False, **kw)


def _in_subprocess(code: str, run) -> None:
    """Run `code` (with `path`, the ledger's path) in another process, as an agent's shell could."""
    prelude = "import sqlite3, sys; path = sys.argv[1]\n"
    subprocess.run([sys.executable, "-c", prelude + code, str(run.run.path / "ledger.db")], check=True, timeout=120)


def test_sessions_of_a_shared_fold_fold_each_event_once_and_see_the_same_state(run):
    from rsi_master.expos import SharedProjections, Strict

    pool = SharedProjections()
    with _open(run, pool) as a:
        pa = a.projection()
        assert pa.rows_read == pa.size == run.run.ledger.size()
    run.call(MAIN, "worker.add", {"worker_id": "w3", "task": "t3"})
    # A later session, with a guard policy of its own, starts from where the first one stopped.
    with _open(run, pool, guards=Strict()) as b:
        pb = b.projection()
        assert pb.size == run.run.ledger.size() and pb.rows_read == pb.size  # the two new rows, once
        assert pb.state is pa.state and "w3" in pb.state.workers
        fresh = Projection(run.run.ledger)
        fresh.advance()
        assert _dump(pb) == _dump(fresh)
        # Events another process appends are read from the ledger, by whichever session reads next.
        code = (
            "from rsi_master.expos import Caller, ExpOS\n"
            "with ExpOS.open(sys.argv[1].removesuffix('/ledger.db')) as x:\n"
            "    x.call(Caller('main', 'main'), 'worker.add', {'worker_id': 'w9', 'task': 'from elsewhere'})\n"
        )
        _in_subprocess(code, run)
        assert load_state(b.reader).workers["w9"].task == "from elsewhere"
        assert b.projection().size == run.run.ledger.size()


@pytest.mark.parametrize(
    "attack",
    [
        # The last event's hash rewritten.
        "c = sqlite3.connect(path)\nc.execute('DROP TRIGGER events_no_update')\n"
        "c.execute('UPDATE events SET hash = ? WHERE seq = (SELECT max(seq) FROM events)', ('f' * 64,))\nc.commit()\n",
        # The ledger rolled back by its last two events.
        "c = sqlite3.connect(path)\nc.execute('DROP TRIGGER events_no_delete')\n"
        "c.execute('DELETE FROM events WHERE seq >= (SELECT max(seq) - 1 FROM events)')\nc.commit()\n",
    ],
    ids=["rewritten", "rolled-back"],
)
def test_a_shared_fold_refuses_a_ledger_changed_under_it_from_another_process(run, attack):
    from rsi_master.expos import SharedProjections

    pool = SharedProjections()
    with _open(run, pool) as a, _open(run, pool) as b:
        a.projection()
        _in_subprocess(attack, run)
        # Neither the session that folded nor another one sharing the fold reads on.
        for session in (a, b):
            with pytest.raises(LedgerError, match="no longer the one this session read"):
                session.projection()
    # Nor a session opened after the change.
    with _open(run, pool) as c, pytest.raises(LedgerError, match="no longer the one this session read"):
        c.projection()
    if "DELETE" in attack:  # and the run's writer refuses to sign a rolled-back ledger on close
        with pytest.raises(LedgerError, match="rolled back"):
            run.close()


def test_a_replaced_ledger_file_gets_a_fold_of_its_own(run):
    """A ledger file replaced by another process (a copy with one more event, appended around the
    key): a session opened on it folds it from its first event, and the fold the sessions of the
    old file shared never takes in the new file's event."""
    from rsi_master.expos import SharedProjections

    pool = SharedProjections()
    with _open(run, pool) as a:
        pa = a.projection()
        old_size, old_state = pa.size, pa.state
    run.close()  # no connection left on the old file: sqlite's -wal and -shm go by path
    code = (
        "import os\n"
        "from rsi_master.ledger._event import EventDraft, seal\n"
        "src = sqlite3.connect(path)\ncopy = sqlite3.connect(path + '.new')\nsrc.backup(copy)\nsrc.close()\n"
        "seq, prev = copy.execute('SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1').fetchone()\n"
        "d = EventDraft.model_validate({'kind': 'candidate.nominate', 'actor': {'role': 'main', 'id': 'main'},\n"
        "                               'payload': {'experiment_id': 'exp-99999'}})\n"
        "e, body = seal(d, seq=seq + 1, ts='2030-01-01T00:00:00.000000Z', prev_hash=prev)\n"
        "copy.execute('INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)',\n"
        "             (seq + 1, prev, e.hash, e.kind, 'main', 'main', e.ts, body))\n"
        "copy.commit()\ncopy.close()\nos.replace(path + '.new', path)\n"
    )
    _in_subprocess(code, run)
    with _open(run, pool) as b:
        pb = b.projection()
        assert pb.state is not old_state and pb.rows_read == pb.size == old_size + 1
        assert pb.state.nominations[-1][0] == "exp-99999"
    assert old_state.nominations == []


def test_the_inline_executor_shares_one_fold_between_its_nodes():
    from rsi_master.expos import SharedProjections
    from rsi_master.orchestra._executor import InlineExecutor, ProcessExecutor

    assert isinstance(InlineExecutor(0.0).projections, SharedProjections)
    assert not hasattr(ProcessExecutor(), "projections")  # slot processes fold their own
