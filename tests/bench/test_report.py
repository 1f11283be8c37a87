"""Figures from campaign results: mean and std over seeds, macro average over tasks, the
best-so-far curve, the table, the plot; and the CLI's refusals of bad input."""

from __future__ import annotations

import math
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


def test_the_real_bench_pairs_each_configuration_with_the_reference_on_task_and_seed():
    """The real bench's paired test is the simulated bench's (`paired_scores`), on the reported
    score of each (task, seed) both configurations ran; a campaign the reference lacks is unpaired."""
    from rsi_master.bench import paired_scores

    ref = {("arithmetic", 0): 0.1, ("arithmetic", 1): 0.3, ("knowledge", 0): 0.2, ("knowledge", 1): 0.5}
    other = {("arithmetic", 0): 0.0, ("arithmetic", 1): 0.35, ("knowledge", 0): 0.1, ("knowledge", 1): 0.2}
    rs = [_result("rsi-master", t, s, v) for (t, s), v in ref.items()]
    rs += [_result("serial", t, s, v) for (t, s), v in other.items()] + [_result("serial", "arithmetic", 2, 0.9)]
    f = aggregate(rs, ["rsi-master", "serial"], reference="rsi-master")
    assert f["rsi-master"]["test"] is None
    t = f["serial"]["test"]
    assert t == paired_scores(other, ref, "serial", "rsi-master").model_dump(mode="json")
    assert t["pairs"] == 4 and t["reference"] == "rsi-master"
    assert t["mean_diff"] == pytest.approx((0.1 * -1 + 0.05 - 0.1 - 0.3) / 4)
    assert t["relative"] == pytest.approx(sum(other.values()) / sum(ref.values()) - 1)
    # Exact over the 16 sign flips of (-0.1, +0.05, -0.1, -0.3): only the 4 with the 0.1s and 0.3 alike reach 0.45.
    assert t["p_permutation"] == pytest.approx(4 / 16)
    # Nothing to pair with: no test, and undefined figures are null (strict JSON that reads back equal).
    assert aggregate(rs, ["serial"])["serial"]["test"] is None
    zero = aggregate(
        [_result(c, "knowledge", 0, 0.0) for c in ("rsi-master", "serial")], ["rsi-master", "serial"], "rsi-master"
    )
    assert zero["serial"]["test"]["relative"] is None and zero["serial"]["test"]["p_permutation"] == 1.0


def test_a_preset_budget_rises_to_what_the_check_accepts_on_this_machine_and_a_given_one_is_checked():
    from rsi_master.bench import machine_budget
    from rsi_master.bench._bench import HEADROOM
    from rsi_master.orchestra import min_budget_s
    from rsi_master.tasks import get_task

    fast, slow = {"step_s": 0.3, "overhead_s": 8.0}, {"step_s": 0.6, "overhead_s": 30.0}
    assert min_budget_s(get_task("knowledge"), fast) * HEADROOM < 40  # as fast as the quick preset assumed
    assert machine_budget(["knowledge"], fast, None, 40.0)[0] == 40.0
    least = min_budget_s(get_task("knowledge"), slow)
    assert least > 40  # the machine of the failed quick bench: 40 s was refused by every campaign
    budget, told = machine_budget(["knowledge"], slow, None, 40.0)
    assert told == least and HEADROOM * least <= budget < HEADROOM * least + 5 and budget % 5 == 0
    assert machine_budget(["knowledge"], slow, 300.0, 40.0)[0] == 300.0
    with pytest.raises(RsiMasterError, match=f"give at least {math.ceil(least)}s"):
        machine_budget(["knowledge"], slow, 40.0, 40.0)


def test_the_real_bench_writes_its_page_and_prints_its_paired_tests(tmp_path, capsys, monkeypatch):
    """`rsi-master bench` (real backend) with its campaigns stood in for: `html: PATH` and one
    `paired_NAME:` line per configuration paired with the reference, and the page's table."""
    import rsi_master.bench._bench as real

    scores = {"rsi-master": [0.2, 0.4, 0.3, 0.5], "no-expos": [0.1, 0.1, 0.2, 0.3], "serial": [0.2, 0.4, 0.3, 0.5]}
    plan = [("arithmetic", 0), ("knowledge", 0), ("arithmetic", 1), ("knowledge", 1)]
    monkeypatch.setattr(real, "calibrate", lambda *a, **k: {"step_s": 0.1, "overhead_s": 5.0})
    monkeypatch.setattr(real, "run_campaign", lambda c, t, s, *a, **k: _result(c, t, s, scores[c][plan.index((t, s))]))
    out = tmp_path / "bench"
    argv = ["bench", "--configs", "rsi-master,no-expos,serial", "--tasks", "arithmetic,knowledge", "--seeds", "0,1"]
    assert main([*argv, "--out", str(out), "--no-plot"]) == 0
    lines = dict(line.split(": ", 1) for line in capsys.readouterr().out.split("\n---\n", 1)[1].splitlines())
    assert lines["html"] == str(out / "bench.html")
    assert "paired_rsi-master" not in lines  # the reference
    assert lines["paired_no-expos"] == (
        "diff -0.1750 vs rsi-master (95% CI -0.2500..-0.1000), p_perm 0.125, p_wilcoxon 0.125, pairs 4"
    )
    # The same scores: no difference, and no Wilcoxon test of all-zero differences.
    assert (
        lines["paired_serial"]
        == "diff +0.0000 vs rsi-master (95% CI +0.0000..+0.0000), p_perm 1, p_wilcoxon n/a, pairs 4"
    )
    page = (out / "bench.html").read_text()
    assert "<h1>RSI-Master bench</h1>" in page and "http" not in page.split("<script>", 1)[0].lower().replace(
        "http-equiv", ""
    )
    rows = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0].split("</tr>")[:-1]
    assert [r.split("<td>", 2)[1].split("</td>")[0] for r in rows] == ["rsi-master", "no-expos", "serial"]
    assert "reference" in rows[0] and "4 pairs" in rows[1] and "0.125 / 0.125" in rows[1]
