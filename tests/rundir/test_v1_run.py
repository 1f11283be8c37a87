"""The committed schema-v1 run (tests/fixtures/v1_run) still verifies, audits, shows its lineage
and its log with today's code, exactly as the v1 code printed them."""

from __future__ import annotations

import json

import pytest

from rsi_master.cli._main import main
from rsi_master.rundir import verify_run
from tests.helpers import V1_RUN, v1_run

EXPECTED = V1_RUN / "expected"


@pytest.fixture
def v1(tmp_path):
    return v1_run(tmp_path)


def test_the_fixture_is_a_version_1_ledger(v1):
    import sqlite3

    conn = sqlite3.connect(v1[0] / "ledger.db")
    versions = {json.loads(body)["version"] for (body,) in conn.execute("SELECT body FROM events")}
    conn.close()
    assert versions == {1}


def test_v1_run_verifies(v1):
    run_dir, key_dir = v1
    report = verify_run(run_dir, key_dir=key_dir)
    assert report.ok, report.problems[:3]
    assert report.ledger.events == 80 and report.artifacts == 49


def test_v1_run_audits_with_the_v1_flags(v1, capsys):
    run_dir, key_dir = v1
    assert main(["audit", str(run_dir), "--key-dir", str(key_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads((EXPECTED / "audit.json").read_text())
    main(["audit", str(run_dir), "--key-dir", str(key_dir)])
    assert capsys.readouterr().out == (EXPECTED / "audit.txt").read_text()


@pytest.mark.parametrize("xid", ["exp-00016", "exp-00017"])
def test_v1_run_shows_its_lineage(v1, capsys, xid):
    run_dir, key_dir = v1
    assert main(["lineage", str(run_dir), xid, "--key-dir", str(key_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads((EXPECTED / f"lineage-{xid}.json").read_text())
    assert main(["lineage", str(run_dir), xid, "--key-dir", str(key_dir)]) == 0
    assert capsys.readouterr().out == (EXPECTED / f"lineage-{xid}.txt").read_text()


def test_v1_run_shows_its_log(v1, capsys):
    run_dir, _ = v1
    assert main(["log", str(run_dir)]) == 0
    assert capsys.readouterr().out == (EXPECTED / "log.txt").read_text()
    assert main(["log", str(run_dir), "--json"]) == 0
    assert capsys.readouterr().out == (EXPECTED / "log.jsonl").read_text()
