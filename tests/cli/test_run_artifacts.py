"""`rsi-master run --artifacts URL`: a simulated run keeps its artifacts on an S3-compatible store
(the run directory holds the pointer and this machine's cache), verifies and audits clean, and
`export` brings every artifact down into a run directory that verifies on its own; a bad URL or a
missing backend is one line, with nothing written."""

from __future__ import annotations

import json
import shutil

import pytest

from rsi_master.cli._main import main
from rsi_master.sim import generate_world, save_world

pytest.importorskip("fsspec")


@pytest.mark.scale
@pytest.mark.slow  # about a minute idle: a whole campaign over HTTP; tests/rundir/test_shared_store.py covers each part fast
def test_a_sim_run_on_s3_verifies_audits_and_exports(tmp_path, capsys, s3, monkeypatch):
    monkeypatch.setenv("RSI_MASTER_ARTIFACTS", "")  # restored after: `run` sets it for its process
    land = save_world(generate_world(4), tmp_path / "world.json")
    run = tmp_path / "run"
    args = ["run", "--backend", "sim", "--world", str(land), "--budget", "30m", "--slots", "2", "--dir", str(run)]
    assert main([*args, "--artifacts", s3]) == 0
    assert "experiments: " in capsys.readouterr().out
    url = json.loads((run / "artifacts.json").read_text())["url"]
    assert url.startswith(s3 + "/run-")  # each run under its own id
    assert main(["verify", str(run)]) == 0
    out = capsys.readouterr().out
    assert "problems: 0" in out
    assert main(["audit", str(run)]) == 0
    assert "flagged: none" in capsys.readouterr().out
    # Another machine: the same run directory without this machine's cache reads everything by digest.
    shutil.rmtree(run / "artifacts")
    assert main(["verify", str(run)]) == 0
    assert "problems: 0" in capsys.readouterr().out
    assert main(["export", str(run), "--to", str(tmp_path / "out")]) == 0
    assert "verify: ok" in capsys.readouterr().out
    assert not (tmp_path / "out" / "artifacts.json").exists()
    assert main(["verify", str(tmp_path / "out")]) == 0


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("nosuch://bucket/x", "fsspec knows no protocol 'nosuch'"),
        ("gcs://bucket/x", "the gcs:// backend is not installed"),
    ],
)
def test_a_bad_artifacts_url_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, url, said):
    monkeypatch.setenv("RSI_MASTER_ARTIFACTS", "")
    if url.startswith("gcs") and _has("gcsfs"):
        pytest.skip("gcsfs is installed here")
    run = tmp_path / "run"
    assert main(["run", "--backend", "sim", "--budget", "5m", "--dir", str(run), "--artifacts", url]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rsi-master: error: --artifacts") and said in err and "\n" not in err
    assert not run.exists()


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
