"""`rsi-master run --keep referenced` end to end (slow: a whole short run on the shipped model).

The pruning rules themselves are tested fast in tests/expos/test_prune.py; here a real run
closes with them, and `verify` and `audit` of the pruned run are clean and name what went.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rsi_master.cli", *args], capture_output=True, text=True)


def test_a_run_with_keep_referenced_prunes_and_stays_clean(tmp_path):
    os.environ["RSI_MASTER_KEY_DIR"] = str(tmp_path / "keys")
    run_dir = tmp_path / "run"
    out = _cli("run", "--task", "arithmetic", "--budget", "90s", "--keep", "referenced", "--dir", str(run_dir))
    assert out.returncode == 0, out.stderr[-2000:]
    from rsi_master.events import ArtifactPrune, typed
    from rsi_master.expos import ExpOS, protected_checkpoints

    with ExpOS.open(run_dir, writable=False) as x:
        prunes = [typed(e, ArtifactPrune).payload for e in x.own_events("artifact.prune")]
        kept = protected_checkpoints(x.reader)
        st_selected = [e.payload.get("selected") for e in x.own_events("harness.select")]
        pruned = {p.experiment_id for p in prunes[0].pruned} if prunes else set()
        assert not pruned & set(kept)
        assert all(s is None or s in kept for s in st_selected)
        for p in prunes[0].pruned if prunes else []:
            assert x.run.store.is_pruned(p.checkpoint)
    verify = _cli("verify", str(run_dir))
    assert verify.returncode == 0, verify.stdout
    if pruned:
        assert "pruned by the keep policy" in verify.stdout
    audit = _cli("audit", str(run_dir))
    assert audit.returncode == 0, audit.stdout[-2000:]
