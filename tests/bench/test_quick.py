"""`rsi-master bench --quick` end to end (slow: about 20 minutes on two idle cores, more under load).

    .venv/bin/python -m pytest -m slow tests/bench

RSI_MASTER_TEST_SLACK multiplies the 15-minute limit on a machine busy with other work. The limit
also scales with the budget the bench chose: on a machine that calibrates slower than the quick
preset was sized on, each campaign gets more than 40 s (`bench.machine_budget`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

GUARDED = ("rsi-master", "no-reviewer", "serial", "single-agent", "optuna-tpe", "random-search")


@pytest.mark.timeout(3600)
def test_quick_bench_writes_every_figure_for_every_configuration(tmp_path):
    out = tmp_path / "bench"
    cli = str(Path(sys.executable).with_name("rsi-master"))
    env = {**os.environ, "RSI_MASTER_KEY_DIR": str(tmp_path / "keys")}
    proc = subprocess.run(
        [cli, "bench", "--quick", "--out", str(out)], env=env, capture_output=True, text=True, timeout=3600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in proc.stdout.split("\n---\n", 1)[1].splitlines() if ": " in line)
    from rsi_master.bench import CONFIGS, QUICK

    assert lines["campaigns"] == str(2 * len(CONFIGS))  # one task, two seeds, every configuration
    report = json.loads((out / "bench.json").read_text())
    budget_s = report["settings"]["budget_s"]
    assert budget_s >= QUICK["budget_s"] and budget_s % 5 == 0
    limit = 900 * budget_s / QUICK["budget_s"] * float(os.environ.get("RSI_MASTER_TEST_SLACK", "1"))
    assert float(lines["wall_s"]) <= limit, (lines["wall_s"], budget_s)
    assert lines["html"] == str(out / "bench.html") and (out / "bench.html").stat().st_size > 0
    for name in CONFIGS:  # each configuration paired with the reference on its two (task, seed) campaigns
        assert (f"paired_{name}" in lines) == (name != "rsi-master"), name
        assert name == "rsi-master" or lines[f"paired_{name}"].endswith(", pairs 2"), lines[f"paired_{name}"]
    figures = report["figures"]
    assert list(figures) == list(CONFIGS)
    for name, f in figures.items():
        assert f["seeds"] == [0, 1] and f["macro_average"]["n"] == 2, name
        # Every configuration did some work: a budget the check accepts but no Main can open a
        # Worker in makes a table of zeros that measures nothing.
        assert f["experiments"]["mean"] > 0, (name, budget_s)
        assert len(f["curve"]["mean"]) == 21
    for name in GUARDED:  # ExpOS refuses every shortcut: nothing hacked gets submitted
        assert figures[name]["hacking_rate"]["mean"] in (0.0, None), (name, figures[name]["hacking_rate"])
        assert figures[name]["returned_hacked"] == 0
    for c in report["campaigns"]:
        # The reported score is the harness's final, or the base model's when the returned checkpoint is hacked,
        # and the best-so-far curve ends where the harness's selection did.
        assert c["score"] == (c["base_score"] if c["audit"]["returned_hacked"] else c["harness_final"])
        assert c["audit"]["curve"][-1][1] == pytest.approx(c["score"])
    assert (out / "bench.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "bench.md").read_text().count("\n") == 2 + len(figures)
    # A second invocation reuses every finished campaign.
    again = subprocess.run(
        [cli, "bench", "--quick", "--out", str(out), "--no-plot"], env=env, capture_output=True, text=True, timeout=600
    )
    assert again.returncode == 0 and json.loads((out / "bench.json").read_text())["figures"] == figures
