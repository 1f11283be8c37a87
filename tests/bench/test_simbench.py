"""`rsi-master bench --backend sim`: bad input is one line and writes nothing; the plan covers
development and held-out generator seeds."""

from __future__ import annotations

import pytest

from rsi_master.bench import CONFIGS, check_sim_settings, sim_campaign_id
from rsi_master.cli._main import main
from rsi_master.errors import RsiMasterError


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backend", "gpu-cluster"], "unknown backend 'gpu-cluster'"),
        (["--backend", "sim", "--flag", "forget=9"], "forget"),
        (["--backend", "sim", "--flag", "forget"], "expected NAME=VALUE"),
        (["--backend", "sim", "--preset", "nope"], "unknown preset"),
        (["--backend", "sim", "--landscapes", "0"], "--landscapes must be an integer in 1.."),
        (["--backend", "sim", "--landscapes", "100001"], "--landscapes must be an integer in 1.."),
        (["--backend", "sim", "--seeds", "0"], "must be at least 1"),
        (["--backend", "sim", "--seeds", "1,1"], "seeds repeat"),
        (["--backend", "sim", "--configs", "rsi-master,nope"], "unknown configuration nope"),
        (["--backend", "sim", "--budget", "ten hours"], "budget"),
        (["--backend", "sim", "--slots", "0"], "slots must be at least 1"),
        (["--backend", "sim", "--jobs", "0"], "jobs must be at least 1"),
        (["--backend", "sim", "--tasks", "knowledge"], "--tasks does not apply"),
        (["--landscapes", "3"], "only apply with --backend sim"),
        (["--held-out"], "only apply with --backend sim"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "bench"
    assert main(["bench", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("rsi-master: error:"), err
    assert not out.exists()


def test_settings_check_returns_budget_and_flags():
    budget, flags = check_sim_settings(list(CONFIGS), 200, [0], "10h", 4, 2, "hard", {"forget": 0.5})
    assert budget == 36_000.0 and flags.forget == 0.5
    with pytest.raises(RsiMasterError, match="configurations repeat"):
        check_sim_settings(["pbt", "pbt"], 1, [0], "1h", 4, 2, "default", None)


def test_campaign_ids_name_configuration_landscape_and_seed():
    ids = {sim_campaign_id(c, ls, s) for c in ("asha", "pbt") for ls in (0, 1_000_000) for s in (0, 1)}
    assert len(ids) == 8 and "pbt--L1000000--s1" in ids
