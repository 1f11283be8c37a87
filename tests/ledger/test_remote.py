"""A writer without the key: its heads are signed by a `WitnessingSigner` over the key holder's own
ledger, which signs only rows it checked (they extend its chain, hash to their bytes, carry the
columns their body says, and name the holder's actor), and moves the witness."""

from __future__ import annotations

import pytest

from rsi_master.errors import LedgerError
from rsi_master.ledger import ForgedEvent, KeyDir, RemoteLedger, WitnessingSigner, load_public_key
from rsi_master.ledger._event import seal, validate_draft
from rsi_master.ledger._schema import utc_now
from rsi_master.rundir import RunDir, verify_run
from tests.helpers import draft, make_run

W1 = {"role": "worker", "id": "w1", "cap": "0123456789abcdef"}


class Holder:
    """The key holder as a capability's holder reaches it: `actor` is whom the capability names."""

    def __init__(self, signer: WitnessingSigner, actor: dict[str, str]) -> None:
        self.signer, self.actor = signer, actor

    def vouch(self):
        return self.signer.vouch()

    def sign(self, rows):
        return self.signer.sign(rows, self.actor)

    def publish(self):
        self.signer.publish()


@pytest.fixture
def keeper(tmp_path, key_dir):
    run = make_run(tmp_path / "run", events=5)
    yield run
    run.close()


def _remote(run: RunDir, actor=W1) -> RemoteLedger:
    pem = (run.path / "ledger.pub").read_bytes()
    holder = Holder(WitnessingSigner(run.ledger), actor)
    return RemoteLedger.open_remote(run.path / "ledger.db", holder, load_public_key(pem), pem.decode(), 4)


def test_a_writer_without_the_key_appends_its_own_events_and_the_run_verifies(keeper, key_dir):
    remote = _remote(keeper)
    for i in range(9):  # past checkpoint_every: a checkpoint row signed by the holder too
        remote.append({**draft(i), "actor": W1})
    remote.append_many([{**draft(i), "actor": W1} for i in range(3)])
    remote.close()
    assert keeper.ledger.size() == 5 + 12
    report = verify_run(keeper.path, key_dir=KeyDir(key_dir))
    assert report.problems == [] and report.ledger.witness_size == 17


def test_an_event_as_another_actor_is_not_signed_and_nothing_commits(keeper):
    remote = _remote(keeper)
    for other in ({"role": "harness", "id": "orchestra"}, {"role": "worker", "id": "w2", "cap": W1["cap"]}):
        with pytest.raises(ForgedEvent, match="not as the capability's holder"):
            remote.append({**draft(0), "actor": other})
    with pytest.raises(ForgedEvent):  # one forged event in a batch: none of it
        remote.append_many([{**draft(1), "actor": W1}, {**draft(2), "actor": {"role": "main", "id": "main"}}])
    assert keeper.ledger.size() == 5
    remote.append({**draft(3), "actor": W1})  # the writer's own events still go
    remote.close()
    assert keeper.ledger.size() == 6


def _rows(run: RunDir, actor=W1, n: int = 2) -> list[list]:
    """Rows that extend `run`'s ledger as a writer would store them."""
    tip = run.ledger.get(run.ledger.size() - 1).hash
    out = []
    for i in range(n):
        seq = run.ledger.size() + i
        event, body = seal(validate_draft({**draft(i), "actor": actor}), seq=seq, ts=utc_now(), prev_hash=tip)
        out.append([seq, tip, event.hash, event.kind, actor["role"], actor["id"], event.ts, body])
        tip = event.hash
    return out


@pytest.mark.parametrize(
    ("forge", "why"),
    [
        (lambda rows: rows[1].__setitem__(4, "harness"), "columns differ from its body"),
        (lambda rows: rows[1].__setitem__(3, "orchestra.stop"), "columns differ from its body"),
        (lambda rows: rows[1].__setitem__(7, rows[1][7].replace(b'"i":1', b'"i":7')), "not the hash of its stored"),
        (lambda rows: rows[1].__setitem__(1, "0" * 64), "does not extend the signed chain"),
        (lambda rows: rows.pop(0), "does not extend the signed chain"),
        (lambda rows: rows.clear(), "nothing to sign"),
    ],
)
def test_the_signer_refuses_rows_that_are_not_a_clean_extension(keeper, forge, why):
    signer = WitnessingSigner(keeper.ledger)
    rows = _rows(keeper)
    body, signature = signer.sign([tuple(r) for r in rows], W1)  # the honest rows are signed
    assert signature and b'"tree_size":7' in body
    forge(rows)
    with pytest.raises(ForgedEvent, match=why):
        signer.sign([tuple(r) for r in rows], W1)


def test_a_signer_needs_a_writable_ledger(keeper):
    with RunDir.open(keeper.path) as reader, pytest.raises(LedgerError, match="needs a writable ledger"):
        WitnessingSigner(reader.ledger)


def test_a_writer_reading_another_history_than_the_holder_is_refused(keeper, tmp_path):
    remote_path = tmp_path / "other"
    other = make_run(remote_path, events=5)  # another run's ledger, same key directory
    other.close()
    pem = (keeper.path / "ledger.pub").read_bytes()
    holder = Holder(WitnessingSigner(keeper.ledger), W1)
    with pytest.raises(LedgerError, match="differ from the driver's signed head"):
        RemoteLedger.open_remote(remote_path / "ledger.db", holder, load_public_key(pem), pem.decode())
