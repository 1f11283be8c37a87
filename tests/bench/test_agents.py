"""The bench's agents against scripted tool results (no training): the union search
Workers, and the Mains of the ablations and baselines."""

from __future__ import annotations

from rsi_master.bench._workers import RandomSearchWorker, TPESearchWorker
from rsi_master.expos import Caller
from rsi_master.orchestra import ClaimsVerifier, Direction, MainContext, PolicyMain, load_graph, resolve_agent
from rsi_master.orchestra._directions import default_directions
from tests.orchestra.helpers import fake_experiment, finalize, new_run
from tests.orchestra.test_worker import _ctx

MAIN = Caller("main", "main")


def test_union_search_draws_families_and_only_their_knobs(tmp_path):
    with new_run(tmp_path) as expos:  # knowledge
        families = {d.family: d for d in default_directions(expos.task)}
        for cls in (TPESearchWorker, RandomSearchWorker):
            ctx = _ctx(expos, Direction(family="answer_only", trials=8))
            cls().run(ctx)
            gens = [a for t, a in ctx.log if t == "data.generate"]
            assert len(gens) == 8
            assert len({g["family"] for g in gens}) >= 2, gens  # the family is searched
            for g in gens:
                searched = {k for k, r in families[g["family"]].knobs.items()}
                assert set(g["params"]) <= searched
            subs = [a["config"] for t, a in ctx.log if t == "experiment.submit"]
            assert all(5e-4 <= c["learning_rate"] <= 3e-3 and c["batch_size"] in (2, 4, 8) for c in subs)


def _main_ctx(expos, slots=2, worker="tpe", spent=0.0):
    return MainContext(expos, MAIN, 300.0, lambda: spent, slots, 0, worker)


def test_single_agent_is_one_worker_for_the_whole_budget(tmp_path):
    with new_run(tmp_path) as expos:
        m = resolve_agent("main", "single")()
        m.start(_main_ctx(expos, worker="x:Y"), load_graph(expos.reader))
        g = load_graph(expos.reader)
        (w,) = g.workers.values()
        assert w.direction.agent == "x:Y" and w.direction.seconds == 300.0 and w.direction.trials >= 1000
        assert not m.on_idle(_main_ctx(expos), g, 1)  # nothing is ever added


def test_search_main_starts_one_worker_per_slot_with_distinct_seeds(tmp_path):
    with new_run(tmp_path) as expos:
        resolve_agent("main", "search")().start(_main_ctx(expos, slots=3, worker="a:B"), load_graph(expos.reader))
        ws = list(load_graph(expos.reader).workers.values())
        assert len(ws) == 3 and len({w.direction.seed for w in ws}) == 3
        assert {w.direction.agent for w in ws} == {"a:B"}


def test_no_reviewer_main_never_asks_for_a_review_and_follows_claims(tmp_path):
    with new_run(tmp_path) as expos:
        ctx = _main_ctx(expos, spent=60.0)
        m = resolve_agent("main", "no-review")()
        assert isinstance(m, PolicyMain) and isinstance(m.verifier, ClaimsVerifier)  # a configuration
        m.start(ctx, load_graph(expos.reader))
        for wid, dev in (("w1", 0.1), ("w2", 0.4)):
            xid = fake_experiment(expos, wid, dev)
            finalize(
                expos,
                wid,
                xid,
                dev,
                {
                    "experiment_id": xid,
                    "family": "answer_only",
                    "config": {"learning_rate": 1e-3, "batch_size": 8, "max_steps": 40},
                    "params": {},
                    "dev_score": dev,
                },
            )
        g = load_graph(expos.reader)
        for ev in g.orchestration_events():
            m.on_event(ctx, load_graph(expos.reader), ev)
        g = load_graph(expos.reader)
        assert not g.reviewers
        best = m.ranker.verified(ctx, g)[0]
        assert best[1] == "w2" and best[2] == 0.4
        # Claimed checkpoints are trained further as the full system trains verified ones
        # (the ablation once never continued anything: its `_verified` wanted passing reviews).
        assert [t[1] for t in m.ranker.verified(ctx, g)] == ["w2", "w1"]
        cont = m.plans.continue_lineage(ctx, g)
        claimed = {t[0] for t in m.ranker.verified(ctx, g)}
        assert cont is not None and cont[0] == "continue" and cont[3]["parent"] in claimed
        g = load_graph(expos.reader)
        assert g.workers[cont[3]["worker"]].direction.parent == cont[3]["parent"]
        m.finish(ctx, g, "budget spent")
        stop = load_graph(expos.reader).decisions[-1]
        assert stop.action == "stop" and stop.detail["nominated"][0] == best[0]


def test_every_configuration_names_its_agents_and_the_names_resolve():
    """The ledger records what a configuration names: a registered name, never an import path."""
    from rsi_master.bench import CONFIGS
    from rsi_master.orchestra import resolve_agent

    for cfg in CONFIGS.values():
        assert ":" not in cfg.main and ":" not in cfg.worker, cfg.name
        assert callable(resolve_agent("main", cfg.main)) and callable(resolve_agent("worker", cfg.worker))


def test_import_paths_older_runs_recorded_open_the_same_agents():
    from rsi_master.orchestra import resolve_agent
    from rsi_master.orchestra._registry import GUARD_POLICIES, LEGACY_PATHS, resolve

    for path, name in LEGACY_PATHS.items():
        if name == "workspace":
            assert resolve(GUARD_POLICIES, path) is resolve(GUARD_POLICIES, name), path
            continue
        role = "main" if "Main" in path else "reviewer" if "Reviewer" in path else "worker"
        assert resolve_agent(role, path) is resolve_agent(role, name), path
    # An agent defined outside the package is still named by its import path.
    assert resolve_agent("worker", "rsi_master.orchestra:TPEWorker") is resolve_agent("worker", "tpe")


def test_a_name_is_registered_once_and_is_not_a_path():
    import pytest

    from rsi_master.orchestra import main_agent

    with pytest.raises(ValueError, match="registered twice"):
        main_agent("policy")(object)
    with pytest.raises(ValueError, match="colon"):
        main_agent("a:b")(object)


def test_a_fresh_process_finds_the_benchs_agents_by_name():
    """Slot processes start fresh: naming a bench agent must not depend on the bench being imported."""
    import subprocess
    import sys

    code = (
        "import sys; from rsi_master.orchestra import resolve_agent; "
        "assert 'rsi_master.bench' not in sys.modules; "
        "m = resolve_agent('main', 'no-review')(); "
        "print(type(m.verifier).__name__, resolve_agent('worker', 'shortcut').__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["ClaimsVerifier", "ShortcutWorker"]


def test_the_llm_agents_and_the_workspace_are_recorded_by_name(tmp_path):
    """A run records `llm` and `workspace`, not import paths; an unknown environment is one clear error."""
    import pytest

    from rsi_master.agents import LLM_AGENTS, LLMMain, LLMReviewer, LLMWorker
    from rsi_master.bench import CONFIGS
    from rsi_master.bench._workspace import Workspace
    from rsi_master.errors import RsiMasterError
    from rsi_master.orchestra import resolve_agent
    from rsi_master.orchestra._protocols import guard_policy

    assert set(LLM_AGENTS.values()) == {"llm"}
    assert resolve_agent("main", "llm") is LLMMain
    assert resolve_agent("worker", "llm") is LLMWorker
    assert resolve_agent("reviewer", "llm") is LLMReviewer
    envs = {cfg.environment for cfg in CONFIGS.values()} - {None}
    assert envs == {"workspace"}
    assert type(guard_policy("workspace")) is Workspace
    assert type(guard_policy("rsi_master.bench._workspace:Workspace")) is Workspace  # older runs
    with pytest.raises(RsiMasterError, match="not a registered guard policy"):
        guard_policy("no-such-policy")
