"""Figures from campaign results: mean and std over seeds, macro average over tasks, the
best-so-far curve, the table, the plot; and the CLI's refusals of bad input."""

from __future__ import annotations

import statistics

import pytest

from rsi_master.bench import CONFIGS, CampaignAudit, CampaignResult, aggregate, check_settings, markdown, plot
from rsi_master.bench._campaign import _at
from rsi_master.cli._main import main
from rsi_master.errors import RsiMasterError


def _result(config, task, seed, score, *, hacked=False, curve=None, hacking=0.0, blocked=0, executed=0):
    audit = CampaignAudit(
        submissions=2,
        hacked=["exp-00001"] if hacked else [],
        hacking_rate=hacking,
        blocked_attempts=blocked,
        executed_attempts=executed,
        interception_rate=(blocked / (blocked + executed)) if blocked + executed else None,
        blocked_by_subcategory={},
        executed_by_subcategory={},
        workspace_edits=[],
        returned="exp-00001",
        returned_hacked=hacked,
        curve=curve or [(0.0, 0.0), (0.5, score / 2), (1.0, score)],
    )
    return CampaignResult(
        config=config,
        task=task,
        seed=seed,
        budget_s=60,
        slots=2,
        score=score,
        harness_final=score,
        base_score=0.0,
        gain_last_half=score / 2,
        slot_utilisation=0.9,
        experiments=3,
        workers=2,
        reviews=1,
        spent_s=60,
        wall_s=90,
        audit=audit,
    )


def test_macro_average_is_over_tasks_then_mean_and_std_over_seeds():
    rs = [
        _result("rsi-master", "arithmetic", 0, 0.1),
        _result("rsi-master", "knowledge", 0, 0.3),
        _result("rsi-master", "arithmetic", 1, 0.2),
        _result("rsi-master", "knowledge", 1, 0.6),
        _result("no-expos", "arithmetic", 0, 0.0, hacked=True, hacking=0.5, executed=2),
        _result("no-expos", "knowledge", 0, 0.0, hacking=1.0, executed=1),
    ]
    f = aggregate(rs, ["rsi-master", "no-expos", "serial"])
    assert "serial" not in f  # no campaign, no row
    m = f["rsi-master"]["macro_average"]
    assert (
        m["mean"] == pytest.approx(statistics.fmean([0.2, 0.4]))
        and m["std"] == pytest.approx(statistics.stdev([0.2, 0.4]))
        and m["n"] == 2
    )
    assert f["rsi-master"]["score_by_task"]["knowledge"]["mean"] == pytest.approx(0.45)
    assert f["no-expos"]["hacking_rate"]["mean"] == pytest.approx(0.75)
    assert f["no-expos"]["returned_hacked"] == 1 and f["no-expos"]["interception_rate"]["mean"] == 0.0
    assert f["rsi-master"]["interception_rate"]["n"] == 0  # no attempt: no rate
    assert f["rsi-master"]["curve"]["mean"][-1] == pytest.approx(0.3)
    table = markdown(f)
    assert table.count("\n") == 4 and "| rsi-master | 2 |" in table and "0.300 ± 0.141" in table
    assert "| no-expos | 1 |" in table and "75.0" in table


def test_a_seed_missing_a_task_does_not_enter_the_macro_average():
    rs = [
        _result("serial", "arithmetic", 0, 0.2),
        _result("serial", "knowledge", 0, 0.4),
        _result("serial", "arithmetic", 1, 0.9),
    ]
    assert aggregate(rs, ["serial"])["serial"]["macro_average"]["n"] == 1


def test_step_curve_lookup():
    c = [(0.0, 0.0), (0.3, 0.1), (0.7, 0.05), (1.0, 0.05)]
    assert [_at(c, t) for t in (0.0, 0.29, 0.3, 0.5, 0.99, 1.0)] == [0.0, 0.0, 0.1, 0.1, 0.05, 0.05]


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    f = aggregate([_result("rsi-master", "knowledge", s, 0.1 * s) for s in range(3)], ["rsi-master"])
    out = plot(f, tmp_path / "b.png", "test")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "kwargs,msg",
    [
        ({"configs": ["rsi-master", "gpt-5"]}, "unknown configuration gpt-5"),
        ({"configs": []}, "unknown configuration (none given)"),
        ({"tasks": ["chess"]}, "unknown task chess"),
        ({"seeds": []}, "seeds must be"),
        ({"seeds": [0, -1]}, "seeds must be"),
        ({"seeds": [1, 1]}, "seeds repeat"),
        ({"budget": "0"}, "budget"),
        ({"budget": "5x"}, "budget"),
        ({"slots": 0}, "slots"),
        ({"eval_limit": 0}, "eval_limit must be positive, got 0"),  # the line a run gives (check_run_inputs)
    ],
)
def test_bad_settings_are_refused(kwargs, msg):
    args = {
        "configs": list(CONFIGS),
        "tasks": ["knowledge"],
        "seeds": [0, 1, 2],
        "budget": "60s",
        "slots": 2,
        "eval_limit": 5,
        **kwargs,
    }
    with pytest.raises(RsiMasterError) as exc:
        check_settings(args["configs"], args["tasks"], args["seeds"], args["budget"], args["slots"], args["eval_limit"])
    assert msg in str(exc.value)


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["--configs", "rsi-master,nope"], "unknown configuration nope"),
        (["--seeds", "0,x"], "--seeds takes comma-separated"),
        (["--budget=-1m"], "budget"),
        (["--shortcut-rate", "1.5"], "--shortcut-rate must be between 0 and 1"),
    ],
)
def test_cli_refuses_bad_input_with_one_line_and_writes_nothing(tmp_path, capsys, argv, msg):
    out = tmp_path / "bench"
    code = main(["bench", "--out", str(out), "--quick", *argv])
    err = capsys.readouterr().err
    assert code == 2 and msg in err and "Traceback" not in err
    assert not out.exists()
