"""The live view's fold: a view kept up to date event by event is the view read from scratch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rsi_master.expos import ExpOS
from rsi_master.rundir import is_run_dir, memo_for
from rsi_master.views._collect import check_open, collect_open
from rsi_master.views._fold import ViewFold

from .conftest import Run


class Watcher:
    """A display for `start_run` that, each time the campaign reports, folds the events written
    since and compares the fold's view with one read from scratch by a session of its own."""

    def __init__(self, run_dir: Path, key_dir: Path) -> None:
        self.run_dir, self.key_dir = run_dir, key_dir
        self.reader: ExpOS | None = None
        self.scratch: ExpOS | None = None
        self.fold: ViewFold | None = None
        self.compared: list[int] = []
        self.mismatches: list[tuple[int, list[str]]] = []

    def look(self) -> None:
        if self.reader is None:
            if not is_run_dir(self.run_dir):
                return
            self.reader = ExpOS.open(self.run_dir, key_dir=str(self.key_dir), writable=False)
            self.scratch = ExpOS.open(self.run_dir, key_dir=str(self.key_dir), writable=False)
            self.fold = ViewFold(self.reader)
            self.checked = check_open(self.reader, str(self.key_dir), memo_for(self.run_dir))
        assert self.fold is not None and self.scratch is not None
        self.fold.update(self.checked)
        folded = self.fold.view()
        fresh = collect_open(self.scratch.reader, self.checked)
        if fresh.size != folded.size:  # a node thread wrote between the two reads: not comparable
            return
        self.compared.append(folded.size or 0)
        if folded != fresh:
            a, b = folded.model_dump(), fresh.model_dump()
            self.mismatches.append((folded.size or 0, [k for k in a if a[k] != b[k]]))

    def line(self, text: str) -> None:
        self.look()

    def status(self, state: dict[str, Any]) -> None:
        self.look()

    def close(self) -> None:
        self.look()
        for s in (self.reader, self.scratch):
            if s is not None:
                s.close()


def test_a_campaign_folded_as_it_runs_is_the_campaign_read_from_scratch(tmp_path):
    from rsi_master.orchestra import RunSpec, start_run
    from rsi_master.sim import generate_world

    run_dir, key_dir = tmp_path / "run", tmp_path / "keys"
    watcher = Watcher(run_dir, key_dir)
    start_run(
        RunSpec(
            budget="3h",
            backend="sim",
            world=generate_world(1),
            slots=2,
            seed=1,
            run_dir=run_dir,
            key_dir=str(key_dir),
        ),
        display=watcher,
        durable=False,
    )
    assert watcher.mismatches == []
    # Compared at many sizes, the last one the finished run.
    assert len(set(watcher.compared)) >= 10
    with ExpOS.open(run_dir, key_dir=str(key_dir), writable=False) as expos:
        assert max(watcher.compared) == expos.projection().size


def test_one_fold_of_a_finished_llm_campaign_is_its_view(simllm: Run):
    with ExpOS.open(simllm.run_dir, key_dir=str(simllm.key_dir), writable=False) as expos:
        checked = check_open(expos, str(simllm.key_dir), memo_for(simllm.run_dir))
        fold = ViewFold(expos)
        assert fold.update(checked)
        view = fold.view()
        assert view == collect_open(expos.reader, checked)
        assert view.main_transcript and any(n.transcript for n in view.nodes)
        assert not fold.update(checked)  # nothing new: nothing done
        assert fold.changed_since(view.size or 0) is not None
        assert fold.changed_since(3) is None  # a size this fold never stood at: the page reloads it all


def test_a_page_is_told_what_changed_since_it_looked(tmp_path):
    from rsi_master.events import WorkerAdd

    key_dir = tmp_path / "keys"
    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=3, key_dir=key_dir) as writer:
        main = {"role": "main", "id": "main"}
        writer.record(main, WorkerAdd(worker_id="w1", task="a", direction={"family": "x"}, predecessors=[]))
        with ExpOS.open(tmp_path / "run", key_dir=str(key_dir), writable=False) as expos:
            checked = check_open(expos, str(key_dir), memo_for(tmp_path / "run"))
            fold = ViewFold(expos)
            fold.update(checked)
            seen = fold.size
            writer.record(main, WorkerAdd(worker_id="w2", task="b", direction={"family": "x"}, predecessors=["w1"]))
            fold.update(checked)
            writer.record(main, WorkerAdd(worker_id="w3", task="c", direction={"family": "x"}, predecessors=["w2"]))
            fold.update(checked)
            changes = fold.changed_since(seen)
            assert changes is not None and changes.nodes == {"w2", "w3"} and not changes.checks
            assert fold.changed_since(fold.size) is not None and not fold.changed_since(fold.size).nodes  # type: ignore[union-attr]
            assert fold.view() == collect_open(expos.reader, checked)


def test_an_update_reads_and_rebuilds_only_what_its_new_events_touch(sim10h: Run, tmp_path):
    """On a finished 10-hour campaign (hundreds of events, dozens of records), one new Worker is
    one event read and one record built; a Worker finalizing with an experiment is its own
    records, not the run's."""
    import shutil

    from rsi_master.events import WorkerAdd

    # A copy with keys of its own: the writer's witness must not be the shared campaign's.
    run_dir = tmp_path / "run"
    shutil.copytree(sim10h.run_dir, run_dir)
    shutil.copytree(sim10h.key_dir, tmp_path / "keys")
    key_dir = str(tmp_path / "keys")
    with ExpOS.open(run_dir, key_dir=key_dir, writable=False) as expos:
        checked = check_open(expos, key_dir, memo_for(run_dir))
        fold = ViewFold(expos)
        fold.update(checked)
        assert fold.events_read == fold.size > 500 and fold.records_built > 50
        read, built = fold.events_read, fold.records_built
        with ExpOS.open(run_dir, key_dir=key_dir) as writer:
            main = {"role": "main", "id": "main"}
            writer.record(main, WorkerAdd(worker_id="w-new", task="t", direction={"family": "x"}, predecessors=["w1"]))
        fold.update(checked)
        assert (fold.events_read - read, fold.records_built - built) == (1, 1)
        # (No comparison with the view read from scratch here: the new event carries the wall
        # clock's time, the campaign's events the simulated clock's; the other tests compare.)
        assert [n.id for n in fold.view().nodes][-1] == "w-new"


def test_an_event_no_writer_through_expos_could_record_is_left_out_not_raised(tmp_path):
    from rsi_master.events import WorkerAdd

    key_dir = tmp_path / "keys"
    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=3, key_dir=key_dir) as writer:
        main = {"role": "main", "id": "main"}
        writer.record(main, WorkerAdd(worker_id="w1", task="a", direction={"family": "x"}, predecessors=[]))
        with ExpOS.open(tmp_path / "run", key_dir=str(key_dir), writable=False) as expos:
            checked = check_open(expos, str(key_dir), memo_for(tmp_path / "run"))
            fold = ViewFold(expos)
            fold.update(checked)
            # Appended around the door: kinds the view reads, payloads their models refuse.
            bad = writer.run.record_many(
                [
                    {"kind": "agent.step", "actor": {"role": "worker", "id": "w1"}, "payload": {"episode": 3}},
                    {"kind": "tool.call", "actor": {"role": "worker", "id": "w1"}, "payload": {"tool": []}},
                ]
            )
            writer.record(main, WorkerAdd(worker_id="w2", task="b", direction={"family": "x"}, predecessors=["w1"]))
            assert fold.update(checked)
            assert fold.unreadable == [e.seq for e in bad]
            assert [n.id for n in fold.view().nodes] == ["w1", "w2"] and fold.view().nodes[0].transcript == []
