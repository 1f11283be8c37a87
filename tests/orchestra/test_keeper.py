"""The run's keeper, in this process (the Ray executor puts it in an actor on the driver's node): a
session opened with only a capability and the keeper's proxy writes its own events, signed by the
keeper, and never constructs or reads a key directory; an event as anyone else is refused,
nothing of it is written, and the refusal is recorded."""

from __future__ import annotations

import time

import pytest

from rsi_master import ledger as ledger_pkg
from rsi_master.errors import LedgerError
from rsi_master.expos import CapabilityError, ExpOS, ToolRefused
from rsi_master.orchestra._graph import ORCHESTRA
from rsi_master.orchestra._keeper import DriverKeys, KeyKeeper, local_call
from rsi_master.rundir import verify_run
from rsi_master.tasks import SPLITS

from .helpers import new_run


@pytest.fixture
def keeper(tmp_path, key_dir):
    with new_run(tmp_path):
        pass
    k = KeyKeeper(str(tmp_path / "run"), str(key_dir))
    yield k
    k.close()


@pytest.fixture
def no_key_dir(monkeypatch, tmp_path):
    """From here on, no KeyDir may be made and the default key directory does not exist."""

    def refuse(*args, **kwargs):
        raise AssertionError("a KeyDir was constructed in the job's session")

    monkeypatch.setenv("RSI_MASTER_KEY_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setattr(ledger_pkg.KeyDir, "__init__", refuse)


def _session(keeper, token):
    return ExpOS.open(keeper.run.path, key_dir=DriverKeys(local_call(keeper), token))


def _wait_for(expos, kind, n=1):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = expos.events(kind)
        if len(found) >= n:
            return found
        time.sleep(0.05)
    raise AssertionError(f"no {kind} recorded")


def test_a_job_with_only_its_capability_writes_its_own_events_signed_by_the_keeper(keeper, tmp_path, no_key_dir):
    with ExpOS.open(keeper.run.path, key_dir=keeper.keys) as harness:
        token = harness.issue("worker", "w1")
    with _session(keeper, token) as job:
        caller = job.authenticate(token)
        assert (caller.role, caller.id) == ("worker", "w1")
        before = job.run.ledger.size()
        for i in range(3):
            job.run.record({"kind": "worker.note", "actor": caller.actor(), "payload": {"i": i}})
        assert job.run.ledger.size() == before + 3
        # The seeds of the run's protected splits, never the secret: the job draws the same items.
        assert job.seal_key().secret is None and not job.seal_key().is_public
        drawn = {s: [i.sample_id for i in job.protected_task().eval_items(s)] for s in SPLITS}
    # As a node's process, the job leaves the drawing to its gate, which draws them from the seeds.
    with ExpOS.open(keeper.run.path, key_dir=DriverKeys(local_call(keeper), token), gate_process=True) as node:
        gated = {s: ids for s, (_, ids) in node.gate().pinned(dict.fromkeys(SPLITS, 10**6)).items()}
        assert node.seal_problems() == []
    with ExpOS.open(keeper.run.path, key_dir=keeper.keys) as harness:
        secret = harness.seal_key().secret
        assert secret is not None
        assert drawn == gated == {s: [i.sample_id for i in harness.protected_task().eval_items(s)] for s in SPLITS}
        assert harness.seal_problems() == []
    report = verify_run(tmp_path / "run", key_dir=keeper.keys)
    assert report.problems == []
    # The operator's witness moved with the job's writes (the keeper publishes it).
    assert report.ledger.witness_size == report.ledger.events


def test_an_event_as_anyone_else_is_refused_unwritten_and_recorded(keeper, tmp_path, no_key_dir):
    with ExpOS.open(keeper.run.path, key_dir=keeper.keys) as harness:
        token = harness.issue("worker", "w1")
    with _session(keeper, token) as job:
        caller = job.authenticate(token)
        size = job.run.ledger.size()
        for forged in (ORCHESTRA, {"role": "worker", "id": "w2"}, {"role": "worker", "id": "w1"}):
            with pytest.raises(LedgerError, match="not as the capability's holder"):
                job.run.record({"kind": "orchestra.stop", "actor": forged, "payload": {}})
        # Nothing of them committed; what the ledger gained meanwhile is the keeper's records of the
        # refusals, which it appends on its own thread (awaited below).
        assert not job.events("orchestra.stop")
        assert {e.kind for e in job.events() if e.seq >= size} <= {"guard.blocked"}
        job.run.record({"kind": "worker.note", "actor": caller.actor(), "payload": {}})  # its own still goes
        refusals = _wait_for(job, "guard.blocked", 3)
        assert all(e.actor.model_dump(exclude_none=True) == caller.actor() for e in refusals)
        assert "recorded as harness" in refusals[0].payload["reason"]
    assert verify_run(tmp_path / "run", key_dir=keeper.keys).problems == []


def test_a_bad_capability_gets_nothing_from_the_keeper_and_is_recorded(keeper, no_key_dir):
    with ExpOS.open(keeper.run.path, key_dir=keeper.keys) as harness:
        token = harness.issue("worker", "w1")
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with pytest.raises(CapabilityError):
        _session(keeper, forged)  # the writer cannot even open: the keeper vouches for nobody
    for ask in (lambda: keeper.seal_key(forged, None), lambda: keeper.sign(forged, []), lambda: keeper.publish(forged)):
        with pytest.raises(CapabilityError):
            ask()
    with _session(keeper, token) as job, pytest.raises(ToolRefused):
        job.authenticate(forged)
    with _session(keeper, token) as job:
        blocked = _wait_for(job, "guard.blocked", 5)
        assert {e.actor.id for e in blocked} == {"unauthenticated"}


def test_after_the_runs_final_record_the_keeper_records_no_refusal(tmp_path, key_dir):
    with new_run(tmp_path) as harness:
        token = harness.issue("worker", "w1")
        harness.record(ORCHESTRA, "orchestra.finish", {"summary": "0" * 64, "final_score": None})
        size = harness.run.ledger.size()
    keeper = KeyKeeper(str(tmp_path / "run"), str(key_dir))
    try:
        with pytest.raises(CapabilityError):
            keeper.check_capability(token + "x")
    finally:
        keeper.close()  # waits for its recorder: anything queued is written by now
    with ExpOS.open(tmp_path / "run") as x:
        assert x.run.ledger.size() == size and x.events("guard.blocked") == []
