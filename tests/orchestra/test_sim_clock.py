"""A simulated campaign runs on its simulated clock alone: two runs of one campaign record the same
ledger, byte for byte, event timestamps, durations, deadlines and allowances included.

What differs between the two is what the run draws from its secret and what names it, never a time:
the evaluator's sample hashes and seal commitment, the records' and contamination indexes' digests
(keyed by the seal), and the summary's digest (the summary names the run's id, dated by the real
clock and random). The summary itself is compared without its id.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from rsi_master import _clock
from rsi_master.expos import ExpOS
from rsi_master.ledger import Ledger
from rsi_master.orchestra import PlainDisplay, RunSpec, start_run
from rsi_master.sim import generate_world

# (event kind, payload path): drawn from the run's secret or naming its id (the module docstring).
_SECRET = {
    ("contract.freeze", "seal_commitment"),
    ("contract.freeze", "evaluator.items_sha256"),
    ("eval.record", "record_digest"),
    ("harness.final", "record_digest"),
    ("data.generate", "contamination.index"),
    ("data.mix", "contamination.index"),  # a mixed dataset is checked against the same keyed index
    ("data.check", "index"),
    ("orchestra.finish", "summary"),
}


def _without(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(payload))
    for k, path in _SECRET:
        *parents, leaf = path.split(".")
        node = out if k == kind else None
        for p in parents:
            node = node.get(p) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)
    return out


def _campaign(tmp_path: Path, name: str) -> tuple[list[bytes], dict[str, Any]]:
    start_run(
        RunSpec(budget="1h", backend="sim", world=generate_world(0), slots=2, seed=0, run_dir=tmp_path / name),
        display=PlainDisplay(io.StringIO()),
    )
    led = Ledger.open(tmp_path / name / "ledger.db")
    try:
        rows = [
            json.dumps(
                [e.seq, e.kind, e.actor.role, e.actor.id, e.ts, _without(e.kind, e.payload)], sort_keys=True
            ).encode()
            for e in led.events()
        ]
    finally:
        led.close()
    with ExpOS.open(tmp_path / name) as x:
        finish = next(iter(x.own_events("orchestra.finish")))
        summary = json.loads(x.run.store.path(finish.payload["summary"]).read_text())
    summary.pop("run_id")
    return rows, summary


@pytest.mark.heavy
def test_two_runs_of_a_simulated_campaign_record_the_same_ledger(tmp_path):
    a, summary_a = _campaign(tmp_path, "a")
    b, summary_b = _campaign(tmp_path, "b")
    assert len(a) == len(b) > 100
    assert [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y] == []
    assert summary_a == summary_b
    # The clock starts where every simulated run's does, not at the real time it was started.
    first = json.loads(a[0])
    assert first[1] == "contract.freeze" and first[4] == "2026-01-01T00:00:00.000000Z"
    assert first[5]["simulation"]["clock_start"] == _clock.SIM_EPOCH
