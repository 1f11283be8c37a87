"""The Main without a prior (the default): no task name in orchestra's code, no hint or
landscape file read, plans from the run's own evidence; a prior only where the run names one
(`--prior FILE`), and then the run's stored copy of it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rsi_master.cli._main import main
from rsi_master.expos import Caller
from rsi_master.orchestra import MainContext, PolicyMain, load_graph

from ._plans import BUILT_IN, task_plans
from .helpers import MAIN, fake_experiment, finalize, new_run

ORCHESTRA_SRC = Path(__file__).resolve().parents[2] / "src" / "rsi_master" / "orchestra"


def test_no_built_in_task_or_family_is_named_in_orchestra():
    from rsi_master.tasks import get_task

    names = set(BUILT_IN) | {f for t in BUILT_IN for f in get_task(t).generators()}
    names |= {n.replace("_", " ") for n in names} | {n.replace("_", "-") for n in names}
    found = []
    for path in sorted(ORCHESTRA_SRC.rglob("*.py")):
        text = path.read_text().lower()
        found += [f"{path.name}: {n}" for n in sorted(names) if re.search(rf"\b{re.escape(n)}\b", text)]
    assert not found, found


@pytest.mark.parametrize("task", ["knowledge", "arithmetic"])
def test_a_task_without_hints_or_landscape_gets_the_same_sensible_plans(task, tmp_path, monkeypatch):
    """Hints gone and the landscape file in force unreadable: a Main that read either would
    plan differently or fail. It opens one family per slot and answers reviews as captured."""
    from rsi_master.landscape import ENV_VAR
    from rsi_master.tasks import TaskHints, get_task

    monkeypatch.setattr(type(get_task(task)), "hints", TaskHints())
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "no-such-landscape.json"))
    got = json.loads(json.dumps(task_plans(task, tmp_path), sort_keys=True))
    want = json.loads((Path(__file__).parent / "data" / "first_plans_noprior.json").read_text())[task]
    assert {k: v for k, v in got.items() if k != "default budget"} == {
        k: v for k, v in want.items() if k != "default budget"
    }
    assert got["default budget"] == 300.0  # one default for a task that declares none
    families = set(get_task(task).generators())
    opened = [p["direction"]["family"] for p in got["start 600s 2 slots"] if "add" in p]
    assert len(opened) == 2 and set(opened) <= families


def _ctx(expos, spent, budget=1000.0, slots=2):
    return MainContext(expos, MAIN, budget, lambda: spent, slots)


def _lineage(expos, worker, devs, steps=50):
    """A chain of experiments of one Worker (each continues the last), dev scores `devs`."""
    parent = "base"
    for dev in devs:
        parent = fake_experiment(expos, worker, dev, review=dev, parent=parent, steps=steps)
    return parent


def _verified(expos, first_devs, second_devs):
    """Two opened Workers, each with a lineage, finalized and covered by one passing review
    without recommendations (so that neither revise nor combine answers it)."""
    g = load_graph(expos.reader)
    w1, w2 = sorted(g.workers)
    seqs, tips = [], []
    for w, devs in ((w1, first_devs), (w2, second_devs)):
        x = _lineage(expos, w, devs)
        seqs.append(finalize(expos, w, x, devs[-1]))
        tips.append(x)
    expos.call(MAIN, "review.request", {"reviewer_id": "r1", "question": "q", "scope": [w1, w2]})
    expos.call(Caller("reviewer", "r1"), "review.submit", {"scope": [w1, w2], "verdict": "pass", "evidence": seqs})
    return tips


@pytest.mark.parametrize("prior", [None, "shipped"])
def test_a_climbing_lineage_is_continued_before_an_unexplored_direction_opens(tmp_path, prior):
    # knowledge has three families; two are open. w1's lineage climbs 0.1, 0.2, 0.3 over
    # 400-1,200 examples; w2's is flat at zero. Without a prior the climbing lineage's forecast
    # beats what an unexplored direction is worth: the idle slot continues it. With the
    # shipped prior the policy opens the prior's next direction first, as it always has.
    with new_run(tmp_path, budget_s=1000.0, prior=prior) as expos:
        main = PolicyMain()
        main.start(_ctx(expos, 0.0), load_graph(expos.reader))
        tip, _ = _verified(expos, [0.1, 0.2, 0.3], [0.0])
        assert main.on_idle(_ctx(expos, 100.0), load_graph(expos.reader), 1)
        d = load_graph(expos.reader).decisions[-1]
        if prior is None:
            assert d.action == "continue" and d.detail["parent"] == tip
        else:
            assert d.action == "branch" and "unexplored direction" in d.rationale


def test_flat_lineages_give_way_to_an_unexplored_direction(tmp_path):
    with new_run(tmp_path, budget_s=1000.0) as expos:
        main = PolicyMain()
        main.start(_ctx(expos, 0.0), load_graph(expos.reader))
        opened = {w.direction.family for w in load_graph(expos.reader).workers.values()}
        _verified(expos, [0.0, 0.0], [0.0])
        assert main.on_idle(_ctx(expos, 100.0), load_graph(expos.reader), 1)
        g = load_graph(expos.reader)
        assert g.decisions[-1].action == "branch"
        new = g.workers[g.decisions[-1].detail["worker"]].direction
        assert new.parent == "base" and new.family not in opened


def test_among_verified_lineages_the_one_still_climbing_is_continued_first(tmp_path):
    # w1 leads on review (0.32) but has flattened; w2 (0.3) is still climbing steeply: one more
    # allowance is expected to make more of w2's lineage, so it is continued first. Scores on
    # 50 items: on 5, neither trend is told from noise.
    with new_run(tmp_path, budget_s=1000.0, eval_limit=50) as expos:
        main = PolicyMain()
        main.start(_ctx(expos, 0.0), load_graph(expos.reader))
        flat, climbing = _verified(expos, [0.3, 0.32, 0.31, 0.32], [0.05, 0.15, 0.3])
        ranked = [t[0] for t in main.ranker.continuations(_ctx(expos, 100.0), load_graph(expos.reader))]
        assert ranked == [climbing, flat]
        assert main.ranker.verified(_ctx(expos, 100.0), load_graph(expos.reader))[0][0] == flat


def test_the_prior_a_run_names_is_its_stored_copy(tmp_path):
    from rsi_master.landscape import SHIPPED, dumps, load
    from rsi_master.orchestra import run_prior

    copy = tmp_path / "mine.json"
    copy.write_text(SHIPPED.read_text())
    with new_run(tmp_path, prior=copy) as expos:
        copy.unlink()  # the run reads its own copy, whatever became of the file
        land = run_prior(expos.reader)
        assert land is not None and dumps(land) == dumps(load(SHIPPED))
        digest = load_graph(expos.reader).settings.prior
        assert expos.run.store.read_bytes(digest).decode() == dumps(land)
    with new_run(tmp_path, name="none") as expos:
        assert run_prior(expos.reader) is None and load_graph(expos.reader).settings.prior is None


def test_a_bad_prior_is_one_line_and_nothing_is_written(tmp_path, capsys):
    target = tmp_path / "new"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for arg, words in ((str(tmp_path / "missing.json"), "no such landscape file"), (str(bad), "not JSON")):
        code = main(["run", "--task", "knowledge", "--prior", arg, "--dir", str(target)])
        out = capsys.readouterr()
        msg = out.err + out.out
        assert code == 2 and words in msg and "Traceback" not in msg and len(msg.strip().splitlines()) == 1
    assert not target.exists() and not list(tmp_path.glob(".new*"))


def test_a_prior_changed_in_the_store_is_refused_not_planned_with(tmp_path):
    """An agent with a shell that rewrites the stored prior (here a subprocess, with the write
    permission the store withholds granted first) does not steer the Main: the bytes no longer
    hash to the digest the run's settings name, and reading the prior fails."""
    import os
    import subprocess
    import sys

    from rsi_master.artifacts import ArtifactMismatch
    from rsi_master.landscape import Landscape, TaskLandscape, dumps
    from rsi_master.orchestra._prior import prior_landscape

    # a prior of its own (a digest no other test stored: read prior landscapes are remembered)
    mine = Landscape(tasks={"knowledge": TaskLandscape()}, produced_by="test_noprior tamper")
    with new_run(tmp_path, prior=mine) as expos:
        digest = load_graph(expos.reader).settings.prior
        blob = expos.run.store.path(digest)
        forged = dumps(Landscape(tasks={"arithmetic": TaskLandscape()}))
        os.chmod(blob, 0o644)
        subprocess.run(
            [sys.executable, "-c", f"open({str(blob)!r}, 'w').write({forged!r})"],
            check=True,
        )
        with pytest.raises(ArtifactMismatch):
            prior_landscape(expos.reader, digest)


def test_a_prior_must_describe_the_runs_task(tmp_path):
    """`check_prior`: the shipped landscape fits every built-in task; a landscape without curves
    for the task, with a curve of a family the task lacks, or fixing a knob its family lacks, is
    refused with one line (start_run checks it before anything is written)."""
    from rsi_master.landscape import Curve, Landscape, LandscapeError, Point, TaskLandscape
    from rsi_master.orchestra._prior import check_prior, read_prior
    from rsi_master.tasks import get_task

    shipped = read_prior("shipped")
    for t in BUILT_IN:
        check_prior(shipped, get_task(t))
    curve = Curve(points=[Point(multiple=1.0, score=0.1)])

    def land(**curves):
        return Landscape(tasks={"knowledge": TaskLandscape(curves=curves)})

    for bad, words in (
        (Landscape(tasks={"arithmetic": shipped.tasks["arithmetic"]}), "no curves for task 'knowledge'"),
        (land(), "no curves for task 'knowledge'"),
        (land(scratchpad=curve), "names no family of task 'knowledge'"),
        (land(**{"answer_only[nope=1]": curve}), "fixes knob 'nope'"),
    ):
        with pytest.raises(LandscapeError, match=re.escape(words)) as exc:
            check_prior(bad, get_task("knowledge"))
        assert "\n" not in str(exc.value)
