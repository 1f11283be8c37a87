"""The Main's first plans on each built-in task, against captures (`_plans`): with the shipped
landscape as the run's prior (`--prior shipped`) the plans it made when that landscape was
every run's prior (captured before the landscape became a package, issue 20), and without a
prior (the default since issue 22) the prior-free plans, whose properties are checked too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._plans import BUILT_IN, task_plans

DATA = Path(__file__).parent / "data"
WITH_PRIOR = json.loads((DATA / "first_plans.json").read_text())
NO_PRIOR = json.loads((DATA / "first_plans_noprior.json").read_text())


@pytest.mark.heavy
@pytest.mark.parametrize("task", BUILT_IN)
def test_with_the_shipped_prior_the_main_plans_as_before(task, tmp_path):
    got = json.loads(json.dumps(task_plans(task, tmp_path, "shipped"), sort_keys=True))
    want = WITH_PRIOR[task]
    assert sorted(got) == sorted(want)
    for case in want:
        assert got[case] == want[case], case


@pytest.mark.heavy
@pytest.mark.parametrize("task", BUILT_IN)
def test_without_a_prior_the_main_plans_as_captured(task, tmp_path):
    got = json.loads(json.dumps(task_plans(task, tmp_path), sort_keys=True))
    want = NO_PRIOR[task]
    assert sorted(got) == sorted(want)
    for case in want:
        assert got[case] == want[case], case


@pytest.mark.parametrize("task", BUILT_IN)
def test_without_a_prior_the_openings_are_plain_families_at_the_generic_trial(task):
    from rsi_master.tasks import get_task

    families = set(get_task(task).generators())
    for case, plans in NO_PRIOR[task].items():
        if not case.startswith("start"):
            continue
        slots = int(case.split()[2])
        adds = [p["direction"] for p in plans if "add" in p]
        # one direction per slot (as many as the task has families), each a family of the task
        assert len(adds) == min(slots, len(families)) and {d["family"] for d in adds} <= families
        assert len({d["family"] for d in adds}) == len(adds)
        # no data selection (only a prior's curves name those), the generic opening trial
        assert all(d["subset"] == "" and d["enqueue"][0]["t:batch_size"] == 2 for d in adds)
        assert all(d["enqueue"][0]["t:learning_rate"] == 1e-3 for d in adds)
    # the opening order does not depend on the budget: nothing was measured yet
    firsts = {
        tuple(p["direction"]["family"] for p in plans if "add" in p)[:1]
        for c, plans in NO_PRIOR[task].items()
        if c.startswith("start") and c.endswith("2 slots")
    }
    assert len(firsts) == 1


def test_without_a_prior_the_opening_order_varies_with_the_run_seed(tmp_path):
    from rsi_master.orchestra import MainContext, PolicyMain, load_graph

    from .helpers import MAIN, new_run

    orders = set()
    for seed in range(6):
        with new_run(tmp_path, "arithmetic", slots=1, seed=seed, name=f"s{seed}") as expos:
            PolicyMain().start(MainContext(expos, MAIN, 300.0, lambda: 0.0, 1, seed), load_graph(expos.reader))
            orders.add(next(iter(load_graph(expos.reader).workers.values())).direction.family)
    assert len(orders) >= 2  # no family opens every campaign


def test_without_a_prior_a_task_directory_opens_with_sft_on_its_train_pool(tmp_path):
    """The seeded order is for directions nothing tells apart; on a task directory, SFT on
    the train pool is what anyone tries first, so it opens every campaign, whatever the seed."""
    from rsi_master.orchestra import MainContext, PolicyMain, load_graph

    from ..tasks.dir.helpers import make_task_dir
    from .helpers import MAIN, new_run

    task = make_task_dir(tmp_path / "task", "numeric", n=4, train=8)
    firsts, seconds = set(), set()
    for seed in range(6):
        with new_run(tmp_path, str(task), slots=2, seed=seed, name=f"s{seed}") as expos:
            PolicyMain().start(MainContext(expos, MAIN, 300.0, lambda: 0.0, 2, seed), load_graph(expos.reader))
            opened = [w.direction for w in load_graph(expos.reader).workers.values()]
            firsts.add((opened[0].family, opened[0].method))
            seconds.add((opened[1].family, opened[1].method))
    assert firsts == {("pool", "sft")}
    assert len(seconds) >= 2 and ("pool", "sft") not in seconds  # the rest still in the seed's order
