"""A simulated campaign (`start_run(RunSpec(backend="sim", ...))`): the real orchestration, ExpOS and
audit on a world and a simulated clock. It ends, verifies, audits clean, says it is
simulated, and is deterministic for its seed."""

from __future__ import annotations

import io
import shutil

import pytest

from rsi_master.errors import RsiMasterError
from rsi_master.expos import ExpOS, audit
from rsi_master.orchestra import PlainDisplay, RunSpec, start_run
from rsi_master.rundir import verify_run
from rsi_master.sim import generate_world


def _campaign(tmp_path, name: str, seed: int = 3, budget: str = "40m", slots: int = 2):
    land = generate_world(1)
    summary = start_run(
        RunSpec(budget=budget, backend="sim", world=land, slots=slots, seed=seed, run_dir=tmp_path / name),
        display=PlainDisplay(io.StringIO()),
    )
    with ExpOS.open(tmp_path / name) as x:
        st = x.projection().state
        trace = [
            (
                x_.id,
                x_.owner,
                x_.parent,
                x_.status,
                x_.spec.get("learning_rate"),
                [(e.split, e.score) for e in x_.evals],
            )
            for x_ in st.experiments.values()
        ]
        contract = x.contract
    return summary, trace, contract


def test_a_simulated_campaign_ends_verifies_audits_clean_and_is_deterministic(tmp_path):
    a, trace_a, contract = _campaign(tmp_path, "a")
    b, trace_b, _ = _campaign(tmp_path, "b")
    assert a["backend"] == "sim" and contract.simulation is not None
    assert contract.simulation.landscape_ident == generate_world(1).ident
    assert a["experiments"] >= 4 and a["spent_s"] >= 0.9 * 40 * 60  # the simulated budget was spent
    assert trace_a == trace_b  # same experiments, specs and scores
    for k in ("final_score", "base_score", "selected", "selected_review_score", "experiments", "decisions"):
        assert a[k] == b[k], k
    assert a["flagged"] == [] and a["hacking_rate"] == 0.0
    assert verify_run(tmp_path / "a").problems == []
    with ExpOS.open(tmp_path / "a") as x:
        report = audit(x)
    assert report.flagged == [] and report.run_dir_issues == []


def test_a_run_deleted_and_started_again_at_its_path_runs_as_the_first_did(tmp_path):
    """A run is created beside its path and renamed into it; the key directory must then know it
    there, or a second run where a deleted one was (a bench's campaign rerun in the same --out)
    is refused as a replaced run directory when it is opened to be driven."""
    a, trace_a, _ = _campaign(tmp_path, "a", budget="10m")
    shutil.rmtree(tmp_path / "a")
    b, trace_b, _ = _campaign(tmp_path, "a", budget="10m")
    assert trace_a == trace_b and a["final_score"] == b["final_score"]
    assert verify_run(tmp_path / "a").problems == []


def test_another_seed_gives_another_campaign(tmp_path):
    _, trace_a, _ = _campaign(tmp_path, "a", seed=3, budget="20m")
    _, trace_b, _ = _campaign(tmp_path, "b", seed=4, budget="20m")
    assert trace_a != trace_b


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "gpu"}, "unknown backend"),
        ({"backend": "sim"}, "needs a simulated world"),
        ({"backend": "real", "world": generate_world(0)}, "for the sim backend"),
        ({"backend": "sim", "world": generate_world(0), "task": "knowledge"}, "its world's"),
    ],
)
def test_bad_backend_input_is_refused_before_anything_is_written(tmp_path, kwargs, message):
    task = kwargs.pop("task", None if kwargs.get("world") is not None else "knowledge")
    with pytest.raises(RsiMasterError, match=message):
        start_run(
            RunSpec(task=task, budget="1h", run_dir=tmp_path / "run", **kwargs), display=PlainDisplay(io.StringIO())
        )
    assert not any(tmp_path.iterdir())
