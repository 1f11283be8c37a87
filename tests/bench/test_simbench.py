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
        (["--backend", "sim", "--worlds", "0"], "--worlds must be an integer in 1.."),
        (["--backend", "sim", "--worlds", "100001"], "--worlds must be an integer in 1.."),
        (["--backend", "sim", "--seeds", "0"], "must be at least 1"),
        (["--backend", "sim", "--seeds", "1,1"], "seeds repeat"),
        (["--backend", "sim", "--configs", "rsi-master,nope"], "unknown configuration nope"),
        (["--backend", "sim", "--budget", "ten hours"], "budget"),
        (["--backend", "sim", "--slots", "0"], "slots must be at least 1"),
        (["--backend", "sim", "--jobs", "0"], "jobs must be at least 1"),
        (["--backend", "sim", "--tasks", "knowledge"], "--tasks does not apply"),
        (["--worlds", "3"], "only apply with --backend sim"),
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


def test_campaign_ids_name_configuration_world_and_seed():
    ids = {sim_campaign_id(c, ls, s) for c in ("asha", "pbt") for ls in (0, 1_000_000) for s in (0, 1)}
    assert len(ids) == 8 and "pbt--L1000000--s1" in ids


@pytest.mark.slow
def test_a_small_sim_bench_runs_the_peers_and_resumes(tmp_path):
    import json

    from rsi_master.bench import run_sim_bench
    from rsi_master.bench._stats import CampaignStats, is_held_out

    configs = ["rsi-master", "no-expos", "asha", "pbt"]
    kw = {"configs": configs, "worlds": 1, "seeds": [0], "budget": "30m", "slots": 2, "jobs": 1}
    res = run_sim_bench(tmp_path / "b", held_out=True, make_plot=False, **kw)
    assert res["campaigns"] == 8
    recs = [CampaignStats.model_validate_json(x) for x in (tmp_path / "b" / "records.jsonl").read_text().splitlines()]
    assert {(r.config, r.held_out) for r in recs} == {(c, h) for c in configs for h in (False, True)}
    assert all(r.held_out == is_held_out(r.world_seed) for r in recs)
    for r in recs:
        assert r.budget_s == 1800.0 and r.spend, r.config  # every configuration trained something
        assert all(0 <= s.start <= s.end for s in r.spend)
        assert r.timeline[0] == (0.0, r.base) and r.base < r.best_reachable
        if r.config != "no-expos":
            assert not r.hacked
    rows = {(s.config, s.held_out): s for s in res["summaries"]}
    assert rows[("asha", True)].test is not None and rows[("rsi-master", True)].test is None
    # resumable: a second run reuses every campaign's stats
    stamp = {p: p.stat().st_mtime_ns for p in (tmp_path / "b" / "campaigns").glob("*/stats.json")}
    again = run_sim_bench(tmp_path / "b", held_out=True, make_plot=False, **kw)
    assert again["table"].split("wall")[1].split("\n", 1)[1] == res["table"].split("wall")[1].split("\n", 1)[1]
    assert stamp == {p: p.stat().st_mtime_ns for p in (tmp_path / "b" / "campaigns").glob("*/stats.json")}
    assert json.loads((tmp_path / "b" / "sim-bench.json").read_text())["campaigns"] == 8


def test_every_new_peer_trains_through_expos_on_the_simulated_backend(tmp_path):
    from rsi_master.bench import run_sim_bench
    from rsi_master.expos import ExpOS, load_state

    peers = ["asha", "hyperband", "pbt"]
    res = run_sim_bench(
        tmp_path / "b", configs=peers, worlds=1, seeds=[0], budget="20m", slots=2, jobs=1, make_plot=False
    )
    assert {s.config for s in res["summaries"]} == set(peers)
    assert all(s.hacking_rate == 0.0 for s in res["summaries"])
    for c in peers:
        with ExpOS.open(tmp_path / "b" / "campaigns" / f"{c}--L0--s0" / "run", writable=False) as expos:
            assert expos.contract.simulation is not None
            xs = load_state(expos.reader).experiments.values()
            assert any(x.status == "completed" for x in xs), c
            if c != "pbt":  # a rung continues from the trial's previous rung
                assert any(x.parent != "base" for x in xs), c


@pytest.mark.heavy
def test_rsi_master_with_a_prior_plans_with_the_pilot_of_its_world(tmp_path):
    """`rsi-master-prior`: a short campaign on the simulated backend plans with the pilot of its
    world (`landscape.sim_pilot`), stored in the run and named in `orchestra.start` as
    `--prior FILE` names one; it is deterministic, verifies and audits clean, and the table
    reports it against `rsi-master` (with and without a prior)."""
    from rsi_master.bench import run_sim_bench
    from rsi_master.expos import ExpOS, audit
    from rsi_master.landscape import dumps, sim_pilot
    from rsi_master.orchestra import load_graph, run_prior
    from rsi_master.rundir import verify_run
    from rsi_master.sim import generate_world

    kw = {"worlds": 1, "seeds": [0], "budget": "1h", "slots": 2, "jobs": 1, "make_plot": False}
    both = run_sim_bench(tmp_path / "a", configs=["rsi-master", "rsi-master-prior"], **kw)
    run_sim_bench(tmp_path / "b", configs=["rsi-master-prior"], **kw)
    rows = {s.config: s for s in both["summaries"]}
    assert rows["rsi-master-prior"].test is not None and rows["rsi-master-prior"].test.reference == "rsi-master"
    assert "| rsi-master-prior |" in both["table"]

    def record(root):
        from rsi_master.bench import CampaignStats

        r = CampaignStats.model_validate_json(
            (root / "campaigns" / "rsi-master-prior--L0--s0" / "stats.json").read_text()
        )
        # times are simulated seconds after an epoch start taken from the wall clock: equal to
        # its float rounding (about 2e-7 s), not bit for bit
        return r.final, [(x.direction, x.score) for x in r.spend], [t for x in r.spend for t in (x.start, x.end)]

    (final, runs, times), (final_b, runs_b, times_b) = record(tmp_path / "a"), record(tmp_path / "b")
    assert (final, runs) == (final_b, runs_b) and times == pytest.approx(times_b, abs=1e-3)  # deterministic
    campaign = tmp_path / "a" / "campaigns" / "rsi-master-prior--L0--s0"
    expected = dumps(sim_pilot(generate_world(0)))
    assert (campaign / "prior.json").read_text() == expected
    with ExpOS.open(campaign / "run", writable=False) as expos:
        digest = load_graph(expos.reader).settings.prior
        assert digest and expos.run.store.read_bytes(digest).decode() == expected
        assert dumps(run_prior(expos.reader)) == expected
        report = audit(expos)
    assert report.flagged == [] and report.run_dir_issues == []
    assert verify_run(campaign / "run").problems == []
    with ExpOS.open(tmp_path / "a" / "campaigns" / "rsi-master--L0--s0" / "run", writable=False) as expos:
        assert load_graph(expos.reader).settings.prior is None  # the reference plans without one


@pytest.mark.parametrize(
    ("config", "given", "expected"),
    [
        ("rsi-master-prior", None, "shipped"),
        ("rsi-master-prior", "mine.json", "mine.json"),
        ("rsi-master", "mine.json", None),
    ],
)
def test_only_a_configuration_with_a_prior_passes_one_to_its_run(tmp_path, monkeypatch, config, given, expected):
    """The real bench's `rsi-master-prior` plans with the shipped landscape unless a campaign is
    given another file; every other configuration plans without one."""
    from rsi_master.bench import ShortcutTendency, _campaign, run_campaign

    seen = {}

    class Stop(Exception):
        pass

    def start_run(spec, **kwargs):
        seen["prior"] = spec.prior
        raise Stop

    monkeypatch.setattr(_campaign, "start_run", start_run)  # where the campaign calls it
    with pytest.raises(Stop):
        run_campaign(
            config, "knowledge", 0, 60.0, tmp_path, slots=1, eval_limit=5, tendency=ShortcutTendency(), prior=given
        )
    assert seen["prior"] == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backend", "sim", "--world-seeds", "5:0"], "COUNT must be at least 1"),
        (["--backend", "sim", "--world-seeds", "99999:2"], "must lie within the development range"),
        (["--backend", "sim", "--world-seeds", "five"], "START[:COUNT]"),
        (["--backend", "sim", "--world-seeds", "3:2", "--worlds", "2"], "without --worlds"),
        (["--backend", "sim", "--world-seeds", "3:2", "--held-out"], "without --worlds or --held-out"),
        (["--world-seeds", "3"], "only apply with --backend sim"),
    ],
)
def test_bad_world_seeds_are_one_line_and_write_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "bench"
    assert main(["bench", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not out.exists()


def test_world_seeds_name_one_range():
    from rsi_master.bench import SeedRange

    assert SeedRange.parse("1000000:3").seeds() == [1_000_000, 1_000_001, 1_000_002]
    assert SeedRange.parse("1000000:3").held_out and not SeedRange.parse("42").held_out
    assert SeedRange.parse("42").seeds() == [42] and str(SeedRange.parse("7:2")) == "7:2"


@pytest.mark.slow
def test_overclaiming_workers_leave_evidence_and_main_pick_returns_the_mains_choice(tmp_path):
    from rsi_master.bench import CampaignStats, SeedRange, audit_campaign, run_sim_bench
    from rsi_master.events import CandidateNominate, WorkerFinalize, typed
    from rsi_master.expos import ExpOS, load_state
    from rsi_master.runtime import read_sim_checkpoint
    from rsi_master.sim import flags_from, generate_world

    res = run_sim_bench(
        tmp_path / "b",
        configs=["main-pick"],
        seeds=[0],
        budget="4h",
        slots=2,
        jobs=1,
        world_seeds=SeedRange(3, 1),
        preset="agents",
        flags={"overclaim_rate": 1.0},
        make_plot=False,
    )
    assert res["campaigns"] == 1
    rec = CampaignStats.model_validate_json((tmp_path / "b" / "records.jsonl").read_text())
    assert not rec.hacked
    run = tmp_path / "b" / "campaigns" / "main-pick--L3--s0" / "run"
    with ExpOS.open(run, writable=False) as expos:
        st = load_state(expos.reader)
        fins = [(e, typed(e, WorkerFinalize).payload) for e in expos.events("worker.finalize")]
        # every Worker overclaims: a claim on another's experiment or on another checkpoint than
        # the candidate passes the door; a rounded-up claim is refused (and then made honestly)
        passed = [p for _, p in fins for c in p.claims if c.experiment_id not in p.candidates]
        blocked = [e for e in expos.events("guard.blocked") if "does not match the evaluation record" in str(e.payload)]
        assert passed or blocked
        # the Main nominates every Worker's candidate in claim order; the bench returns the first
        # one the audit does not flag
        nominated = [
            typed(e, CandidateNominate).payload.experiment_id for e in expos.events("candidate.nominate", role="main")
        ]
        assert nominated and len(nominated) == len(set(nominated))
        flagged = set(audit_campaign(run).hacked)
        pick = st.experiments[next(x for x in nominated if x not in flagged)]
        ckpt, _ = read_sim_checkpoint(expos.run.store.path(pick.checkpoint))
    land = generate_world(3, flags_from("agents", overclaim_rate=1.0))
    assert rec.final == land.accuracy(ckpt, "final")  # what the bench scores is the Main's pick


@pytest.mark.heavy
def test_main_pick_returns_the_first_nomination_the_audit_does_not_flag(tmp_path):
    """On `agents` the Worker with the best claim may rest it on a hack that passes the door
    (here the first three nominations of world 7, seed 1, 4 h are flagged); the Main's pick
    is scored only if the audit does not flag it, as in every guarded configuration."""
    import json

    from rsi_master.bench import audit_campaign
    from rsi_master.bench._shortcuts import ShortcutTendency
    from rsi_master.bench._simbench import sim_campaign
    from rsi_master.events import CandidateNominate, OrchestraStart, typed
    from rsi_master.expos import ExpOS, load_state
    from rsi_master.runtime import read_sim_checkpoint
    from rsi_master.sim import PRESETS, generate_world

    keys = str(tmp_path / "keys")
    raw = sim_campaign(
        "main-pick",
        7,
        False,
        1,
        budget_s=14_400.0,
        out=str(tmp_path),
        flags_json=PRESETS["agents"].model_dump_json(),
        slots=4,
        tendency_json=ShortcutTendency().model_dump_json(),
        key_dir=keys,
    )
    rec = json.loads(raw)
    run = tmp_path / "campaigns" / "main-pick--L7--s1" / "run"
    flagged = set(audit_campaign(run, key_dir=keys).hacked)
    with ExpOS.open(run, key_dir=keys, writable=False) as expos:
        start = typed(expos.events("orchestra.start")[0], OrchestraStart).payload
        assert (start.main, start.worker) == ("main-pick", "shortcut")  # names, never import paths
        nominated = [
            typed(e, CandidateNominate).payload.experiment_id for e in expos.events("candidate.nominate", role="main")
        ]
        assert nominated[0] in flagged  # the best claim rests on a flagged hack
        pick = next(x for x in nominated if x not in flagged)
        ckpt, _ = read_sim_checkpoint(expos.run.store.path(load_state(expos.reader).experiments[pick].checkpoint))
    assert not rec["hacked"]
    assert rec["final"] == generate_world(7, PRESETS["agents"]).accuracy(ckpt, "final")


# Finals of `sim_campaign` (default preset, 4 slots, seed 0): refactoring and speed work must
# leave every campaign's outcome exactly where it was. A change that is meant to move them updates
# them on purpose (the policy configurations' moved when trial combinations began drawing on the
# Workers' claims, `Plans.trial_combination`). The ten-hour figures are 4d020c6's (seven had
# moved since they were pinned and were taken again there, twice, before the simulated clock's
# hand-over changed).
_FINALS_1H_L0 = {
    "rsi-master": 0.47136140936723203,
    "rsi-master-prior": 0.3539213699927506,
    "no-expos": 0.09292301963899173,
    "no-reviewer": 0.46923138073305815,
    "main-pick": 0.47455857079789515,
    "serial": 0.46898371516539206,
    "single-agent": 0.22201003456447366,
    "single-agent-no-expos": 0.22201003456447366,
    "optuna-tpe": 0.17623870008992645,
    "random-search": 0.11230466096418569,
    "asha": 0.2961925163383304,
    "hyperband": 0.1732667359210961,
    "pbt": 0.3386361305972159,
}
_FINALS_10H = {
    ("rsi-master", 0): 0.7405186602787112,
    ("rsi-master-prior", 0): 0.755541747107684,
    ("no-expos", 0): 0.09292301963899173,
    ("no-reviewer", 0): 0.5789400118692495,
    ("main-pick", 0): 0.6049577558529029,
    ("serial", 0): 0.4619513611316146,
    ("single-agent", 0): 0.22349675290207838,
    ("single-agent-no-expos", 0): 0.22349675290207838,
    ("optuna-tpe", 0): 0.41834017267836315,
    ("random-search", 0): 0.32532953352436095,
    ("asha", 0): 0.4795111785308971,
    ("hyperband", 0): 0.19920272145921272,
    ("pbt", 0): 0.43631236560580255,
    ("rsi-master", 1): 0.5575564358709941,
    ("rsi-master-prior", 1): 0.5233080864523286,
    ("no-expos", 1): 0.045692627552591465,
    ("no-reviewer", 1): 0.548455434655683,
    ("main-pick", 1): 0.536388876825616,
    ("serial", 1): 0.5432009625823576,
    ("single-agent", 1): 0.6050764161606046,
    ("single-agent-no-expos", 1): 0.045692627552591465,
    ("optuna-tpe", 1): 0.21783722924253235,
    ("random-search", 1): 0.38696920840412863,
    ("asha", 1): 0.5450146655314216,
    ("hyperband", 1): 0.2661706221717818,
    ("pbt", 1): 0.46932626760469404,
}


def _final(tmp_path, config: str, world: int, budget_s: float) -> float:
    import json

    return float(json.loads(sim_default_campaign(tmp_path, config, world, budget_s))["final"])


def sim_default_campaign(tmp_path, config: str, world: int, budget_s: float) -> str:
    """One simulated campaign as the bench runs it (default preset, 4 slots, seed 0): its stats JSON."""
    from rsi_master.bench._shortcuts import ShortcutTendency
    from rsi_master.bench._simbench import sim_campaign
    from rsi_master.sim import PRESETS

    return sim_campaign(
        config,
        world,
        False,
        0,
        budget_s=budget_s,
        out=str(tmp_path),
        flags_json=PRESETS["default"].model_dump_json(),
        slots=4,
        tendency_json=ShortcutTendency().model_dump_json(),
        key_dir=str(tmp_path / "keys"),
    )


@pytest.mark.parametrize("config", ["serial", "single-agent", "random-search"])
def test_simulated_finals_are_pinned(tmp_path, config):
    """A cheap configuration of each kind (the Main's, the single agent's, a search peer's) on
    one world and a one-hour budget ends exactly where it did."""
    assert _final(tmp_path, config, 0, 3600.0) == _FINALS_1H_L0[config]


@pytest.mark.slow
def test_simulated_finals_of_every_configuration_are_pinned(tmp_path):
    assert set(_FINALS_1H_L0) == set(CONFIGS)
    got = {c: _final(tmp_path, c, 0, 3600.0) for c in CONFIGS}
    assert got == _FINALS_1H_L0


@pytest.mark.slow
def test_simulated_finals_over_ten_hours_are_pinned(tmp_path):
    got = {(c, ls): _final(tmp_path, c, ls, 36_000.0) for c, ls in _FINALS_10H}
    assert got == _FINALS_10H
