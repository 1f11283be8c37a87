"""`rsi-master run --ledger postgresql://...`: a simulated run keeps its ledger in PostgreSQL (the
run directory holds only a pointer to it), verifies and audits clean, and `export` writes it out
as an ordinary run directory that verifies on its own; a bad URL is one line."""

from __future__ import annotations

import json

import pytest

from rsi_master.cli._main import main
from rsi_master.sim import generate_world, save_world


@pytest.mark.scale
@pytest.mark.slow  # about 25 s: a whole simulated campaign; tests/ledger/test_backends.py covers each part fast
def test_a_sim_run_on_postgres_verifies_audits_and_exports(tmp_path, capsys, postgres, monkeypatch):
    # `run --ledger` sets RSI_MASTER_LEDGER in this process for its slot processes: set first, so
    # that monkeypatch restores the variable's absence afterwards (a delenv of an absent one records
    # nothing to restore, and the URL would reach the worker's later tests).
    monkeypatch.setenv("RSI_MASTER_LEDGER", "")
    monkeypatch.delenv("RSI_MASTER_LEDGER")
    land = save_world(generate_world(4), tmp_path / "land.json")
    run = tmp_path / "run"
    args = ["run", "--backend", "sim", "--world", str(land), "--budget", "30m", "--slots", "2", "--dir", str(run)]
    assert main([*args, "--ledger", postgres.writer_url]) == 0
    assert "experiments: " in capsys.readouterr().out
    assert not (run / "ledger.db").exists()
    assert json.loads((run / "ledger.pg").read_text())["url"] == postgres.writer_url
    assert main(["verify", str(run)]) == 0
    assert "problems: 0" in capsys.readouterr().out
    assert main(["audit", str(run)]) == 0
    assert "flagged: none" in capsys.readouterr().out
    assert main(["export", str(run), "--to", str(tmp_path / "out")]) == 0
    assert "verify: ok" in capsys.readouterr().out
    assert main(["verify", str(tmp_path / "out")]) == 0


def test_a_ledger_that_is_not_a_postgres_url_is_one_line(tmp_path, capsys):
    assert main(["verify", str(tmp_path), "--ledger", "mysql://x"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "rsi-master: error: --ledger 'mysql://x': not a postgresql:// URL"
