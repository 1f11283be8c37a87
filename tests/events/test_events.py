"""Event schema v3: one model per kind, typed views, v1 and v2 bodies read through the same models."""

from __future__ import annotations

import re

import pytest

from rsi_master.errors import MalformedEventError
from rsi_master.events import (
    PAYLOADS,
    SCHEMA_VERSION,
    DecisionRecord,
    EvalRecord,
    ExperimentFinish,
    ToolCall,
    UnknownEventKind,
    dump_payload,
    payload_model,
    payload_of,
    typed,
)
from rsi_master.expos import ExpOS
from rsi_master.expos._kinds import EVENT_KINDS
from rsi_master.ledger import EVENT_SCHEMA_VERSION, Actor, Event
from rsi_master.ledger._canonical import canonical_bytes
from rsi_master.rundir import RunDir
from tests.helpers import v1_run

W = Actor(role="worker", id="w1")


def _event(kind: str, payload: dict, version: int = SCHEMA_VERSION) -> Event:
    return Event(
        kind=kind,
        actor=W,
        payload=payload,
        version=version,
        seq=3,
        ts="2026-01-01T00:00:00Z",
        prev_hash="0" * 64,
        hash="1" * 64,
    )


def test_one_model_per_kind_and_the_ledger_writes_this_version():
    assert set(PAYLOADS) == set(EVENT_KINDS)
    assert all(k == payload_model(k).KIND for k in PAYLOADS)
    assert all(m.model_config.get("extra") == "forbid" for m in PAYLOADS.values())
    assert EVENT_SCHEMA_VERSION == SCHEMA_VERSION == 3
    with pytest.raises(UnknownEventKind, match=re.escape("unknown event kind 'no.such'")):
        payload_model("no.such")


def test_typed_gives_the_kinds_model_with_the_events_chain_fields():
    e = _event("tool.call", {"tool": "eval.run", "kind": "monitoring"})
    t = typed(e)
    assert isinstance(t.payload, ToolCall) and t.payload.tool == "eval.run" and t.payload.args is None
    assert (t.kind, t.seq, t.actor, t.hash, t.version) == ("tool.call", 3, W, "1" * 64, 3)
    assert payload_of(e, ToolCall).kind == "monitoring"
    with pytest.raises(MalformedEventError, match=re.escape("is tool.call, not experiment.finish")):
        payload_of(e, ExperimentFinish)


def test_current_payloads_are_closed_and_v1_payloads_lose_only_unknown_fields():
    body = {"experiment_id": "exp-00001", "status": "failed", "error": "boom", "retired_field": 1}
    with pytest.raises(MalformedEventError, match=r"event 3 \(experiment.finish, schema v3\): payload.retired_field"):
        typed(_event("experiment.finish", body))
    old = typed(_event("experiment.finish", body, version=1)).payload
    assert isinstance(old, ExperimentFinish) and old.error == "boom" and old.checkpoint is None
    with pytest.raises(MalformedEventError, match=r"schema v1\): payload.status: Field required"):
        typed(_event("experiment.finish", {"experiment_id": "exp-00001"}, version=1))


def test_a_decision_names_the_event_it_answers_in_a_field_and_older_ones_are_read_into_it():
    body = {"action": "continue", "rationale": "r", "evidence": [4], "detail": {"workers": ["w2"]}, "answers": 4}
    now = typed(_event("decision.record", body)).payload
    assert isinstance(now, DecisionRecord) and now.answers == 4 and now.detail == {"workers": ["w2"]}
    with pytest.raises(MalformedEventError, match=r"schema v3\): payload.answers"):
        typed(_event("decision.record", {**body, "answers": -1}))
    older = {"action": "continue", "rationale": "r", "evidence": [4], "detail": {"event": 4, "workers": ["w2"]}}
    for version in (1, 2):
        old = typed(_event("decision.record", older, version=version)).payload
        assert isinstance(old, DecisionRecord) and old.answers == 4 and old.detail == {"workers": ["w2"]}
    start = typed(_event("decision.record", {**older, "detail": {}}, version=2)).payload
    assert isinstance(start, DecisionRecord) and start.answers is None


def test_absent_fields_stay_absent_so_the_bytes_are_the_writers():
    p = ExperimentFinish(experiment_id="exp-00001", status="failed", error="x")
    assert dump_payload(p) == {"experiment_id": "exp-00001", "status": "failed", "error": "x"}


def test_the_record_path_validates_what_it_writes(tmp_path):
    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=5) as x:
        with pytest.raises(
            MalformedEventError, match=re.escape("malformed eval.record event: payload.split: Field required")
        ):
            x.record(W.model_dump(exclude_none=True), "eval.record", {"experiment_id": "exp-00001"})
        with pytest.raises(UnknownEventKind):
            x.record(W.model_dump(exclude_none=True), "made.up", {})
        with pytest.raises(MalformedEventError, match="takes a ToolCall payload"):
            x.record(W.model_dump(exclude_none=True), "tool.call", ExperimentFinish(experiment_id="e", status="failed"))
        e = x.record(W.model_dump(exclude_none=True), ToolCall(tool="eval.run", kind="monitoring"))
        assert e.kind == "tool.call" and e.version == 3 and e.payload == {"tool": "eval.run", "kind": "monitoring"}
        assert x.run.ledger.size() == 2  # the contract, then the one valid event


def _stored_in_current_form(e: Event) -> dict:
    """The stored payload with the one field that moved since (a decision's answered event)."""
    body = dict(e.payload)
    if e.kind == "decision.record" and e.version < 3 and "event" in body.get("detail", {}):
        detail = dict(body["detail"])
        body["answers"] = detail.pop("event")
        body["detail"] = detail
    return body


def _round_trip(ledger_events) -> int:
    n = 0
    for e in ledger_events:
        if e.kind in PAYLOADS:
            t = typed(e)
            assert canonical_bytes(dump_payload(t.payload)) == canonical_bytes(_stored_in_current_form(e)), (
                e.seq,
                e.kind,
            )
            n += 1
    return n


def test_every_event_of_the_v1_run_reads_and_redumps_to_its_bytes(tmp_path):
    run_dir, key_dir = v1_run(tmp_path)
    with RunDir.open(run_dir, key_dir=key_dir) as run:
        events = list(run.ledger.events())
    assert {e.version for e in events} == {1}
    assert _round_trip(events) == len(events) == 80
    evals = [payload_of(e, EvalRecord) for e in events if e.kind == "eval.record"]
    assert {p.split for p in evals} == {"dev", "review"} and all(p.sample_ids_match for p in evals)


def _assert_current_round_trip(honest):
    with RunDir.open(honest.path, key_dir=honest.key_dir) as run:
        events = list(run.ledger.events())
    assert {e.version for e in events} == {SCHEMA_VERSION}
    assert _round_trip(events) == len(events)
    assert len({e.kind for e in events}) >= 14


def test_every_event_of_a_simulated_run_reads_and_redumps_to_its_bytes(tmp_path):
    """The honest run of the red-team tests on the simulated backend: the same tools and records."""
    from rsi_master.sim import generate_world
    from tests.expos.honest import build_honest

    _assert_current_round_trip(build_honest(tmp_path, generate_world(5)))


@pytest.mark.slow
def test_every_event_of_a_real_run_reads_and_redumps_to_its_bytes(tmp_path):
    """The honest ExpOS run of the red-team tests (it trains): every tool, a review, a decision, refusals."""
    from tests.expos.honest import build_honest

    _assert_current_round_trip(build_honest(tmp_path))


def test_docs_events_md_is_current():
    from pathlib import Path

    from rsi_master.events._docs import DOC_PATH, render

    path = Path(__file__).resolve().parents[2] / DOC_PATH
    assert path.read_text() == render(), "docs/events.md is stale: run `python -m rsi_master.events`"
    assert all(f"## {k}\n" in path.read_text() for k in PAYLOADS)
