"""The harness's selection rule on recorded (fake) experiments.

Fake experiments have no real dataset, so the integrity audit would flag them all; these
tests pin the ranking among accepted submissions with an audit that flags nothing (the
audit's own tests are in tests/expos)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rsi_master.orchestra import MainContext, PolicyMain, load_graph
from rsi_master.orchestra._harness import select

from .helpers import MAIN, fake_experiment, finalize, new_run


@pytest.fixture(autouse=True)
def clean_audit(monkeypatch):
    from rsi_master.orchestra import _harness, _summary

    clean = lambda expos: SimpleNamespace(flagged=[], hacking_rate=0.0, blocked_attempts=0)  # noqa: E731
    for module in (_harness, _summary):  # where the audit is called
        monkeypatch.setattr(module, "audit", clean)


def _two_submissions(expos, first, second):
    """Two opened Workers, each submitting one experiment (review score, steps)."""
    PolicyMain().start(MainContext(expos, MAIN, 1000.0, lambda: 0.0, 2), load_graph(expos.reader))
    xs = []
    for w, (review, steps) in zip(sorted(load_graph(expos.reader).workers), (first, second)):
        xs.append(fake_experiment(expos, w, review, review=review, steps=steps))
        finalize(expos, w, xs[-1], review)
    return xs


def test_the_best_review_score_wins_whatever_the_training(tmp_path):
    with new_run(tmp_path, budget_s=1000.0) as expos:
        x1, _x2 = _two_submissions(expos, (0.2, 20), (0.1, 200))
        assert select(expos)["selected"] == x1


def test_tied_review_scores_go_to_the_checkpoint_with_more_training_behind_it(tmp_path):
    with new_run(tmp_path, budget_s=1000.0) as expos:
        x1, x2 = _two_submissions(expos, (0.0, 20), (0.0, 200))
        sel = select(expos)
        assert sel["selected"] == x2  # later submission, ten times the examples
        assert {r["experiment_id"]: r["lineage_examples"] for r in sel["submissions"]} == {x1: 160, x2: 1600}
        assert select(expos) == sel  # recorded once, reused


FORGE_EVIDENCE = """
import json, sqlite3, sys
from rsi_master.ledger._event import EventDraft, seal
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
for kind, actor, payload in json.loads(sys.argv[2]):
    seq, prev = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    draft = EventDraft.model_validate({"kind": kind, "actor": actor, "payload": payload})
    event, body = seal(draft, seq=seq + 1, ts="2030-01-01T00:00:00.000000Z", prev_hash=prev)
    conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 (seq + 1, prev, event.hash, event.kind, actor["role"], actor["id"], event.ts, body))
"""


@pytest.mark.parametrize("forged", ["review_record", "harness_select", "harness_final"])
def test_forged_evidence_appended_with_a_recomputed_chain_stops_the_harness(tmp_path, forged):
    """An agent with write access to the database appends evidence with a correct hash chain
    (the triggers let it in): the harness's selection and final scoring refuse to read it, and
    `verify` names the rows the signed head does not cover."""
    import json
    import subprocess
    import sys

    from rsi_master.errors import LedgerError
    from rsi_master.orchestra._harness import final_scores
    from rsi_master.rundir import verify_run

    paths = []
    # Its close will not sign the forged rows.
    with (
        pytest.raises(LedgerError, match="not covered by the signed head"),
        new_run(tmp_path, budget_s=1000.0) as expos,
    ):
        _x1, x2 = _two_submissions(expos, (0.2, 20), (0.1, 200))
        base = expos.contract.base_model_artifact
        rows = {
            "review_record": [
                (
                    "eval.record",
                    {"role": "reviewer", "id": "rx"},
                    {
                        "experiment_id": x2,
                        "split": "review",
                        "score": 1.0,
                        "checkpoint_digest": base,
                        "record_digest": "1" * 64,
                    },
                )
            ],
            "harness_select": [
                (
                    "harness.select",
                    {"role": "harness", "id": "harness"},
                    {"selected": x2, "checkpoint": base, "review_score": 1.0},
                )
            ],
            "harness_final": [
                (
                    "harness.final",
                    {"role": "harness", "id": "harness"},
                    {"subject": "base", "split": "final", "score": 1.0, "checkpoint_digest": base},
                )
            ],
        }
        out = subprocess.run(
            [sys.executable, "-c", FORGE_EVIDENCE, str(expos.run.path / "ledger.db"), json.dumps(rows[forged])],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
        )
        assert out.returncode == 0, out.stderr
        with pytest.raises(LedgerError, match="not covered by the signed head"):
            select(expos)
        with pytest.raises(LedgerError, match="not covered by the signed head"):
            final_scores(expos, {"selected": None, "checkpoint": base})
        paths.append(expos.run.path)
    report = verify_run(paths[0])
    assert not report.ok and any("not covered by the signed head" in str(p) for p in report.problems)
