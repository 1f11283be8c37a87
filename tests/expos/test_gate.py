"""The gate: a node's process of a real run (a slot process, a Ray task, the door) asks an
evaluator process of its own about the protected items and never draws them itself. Its answers
are the harness's own (verdicts, clean generated rows, pinned digests, a task directory's pool),
and a process that ran the tools holds no protected item afterwards, which a scan of its heap
shows (with a control that finds them where the items are drawn in-process)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from rsi_master.errors import RsiMasterError
from rsi_master.expos import Caller, ExpOS, ToolInvalid, ToolRefused
from rsi_master.expos._gate import GateProcess, LocalGate
from rsi_master.tasks import TaskInputError
from tests.tasks.dir.helpers import make_task_dir, write_jsonl

WORKER = Caller("worker", "w1")
SPLITS = ("dev", "review", "final")


@pytest.fixture
def arithmetic(tmp_path):
    with ExpOS.create(tmp_path / "run", "arithmetic", eval_limit=4, allowed_teachers=["hand-written"]) as x:
        yield x


def test_a_node_process_asks_its_gate_and_gets_the_harness_answers(arithmetic):
    harness = arithmetic
    with ExpOS.open(harness.run.path, gate_process=True) as node:
        assert isinstance(node.gate(), GateProcess) and isinstance(harness.gate(), LocalGate)
        with pytest.raises(RsiMasterError, match="evaluator processes only"):
            node.protected_task()
        wanted = {s: len(harness.contract.evaluator.sample_ids[s]) for s in SPLITS}
        assert node.gate().pinned(wanted) == harness.gate().pinned(wanted)
        assert node.seal_problems() == [] == harness.seal_problems()
        # The same rows generated clear of the items, byte for byte, and the same refusal of bad knobs.
        assert node.gate().generate("answer_only", {}, 3, 40) == harness.gate().generate("answer_only", {}, 3, 40)
        with pytest.raises(ToolInvalid, match="invalid generator parameters"):
            node.gate().generate("answer_only", {"max_digits": 9}, 0, 5)
        # Rows that restate protected items are refused through the node's door as through the harness's.
        items = harness.protected_task().eval_items("review")
        rows = [{"prompt": i.prompt, "completion": f" {i.reference}"} for i in items]
        for session in (node, harness):
            with pytest.raises(ToolRefused, match="overlaps protected evaluation items"):
                session.call(WORKER, "data.register", {"rows": rows, "source": "hand-written"})
        assert len(harness.events("guard.blocked")) == 2
        made = node.call(WORKER, "data.generate", {"family": "answer_only", "n": 30, "seed": 1})
        assert made.contamination in ("clean", "flagged")
        report = node.gate().check(node.run.store.read_bytes(made.dataset))
        assert report == harness.gate().check(harness.run.store.read_bytes(made.dataset))


def test_a_task_directory_is_read_without_its_protected_splits_in_a_node_process(tmp_path, monkeypatch):
    monkeypatch.setenv("RSI_MASTER_KEY_DIR", str(tmp_path / "keys"))
    task_dir = make_task_dir(tmp_path / "task", "python", name="own-task", train=6)
    # Two train items repeat a dev item: the pool drops them, wherever it is read.
    dev = [json.loads(line) for line in (task_dir / "dev.jsonl").read_text().splitlines() if line.strip()]
    train = [json.loads(line) for line in (task_dir / "train.jsonl").read_text().splitlines() if line.strip()]
    write_jsonl(task_dir / "train.jsonl", [*train, {**dev[0], "id": "t-dup-0"}, {**dev[1], "id": "t-dup-1"}])
    with (
        ExpOS.create(tmp_path / "run", str(task_dir), eval_limit=4) as harness,
        ExpOS.open(harness.run.path, gate_process=True) as node,
    ):
        task = node.task
        assert task.public and sorted(task.files) == ["scorer.py", "task.toml"]
        with pytest.raises(TaskInputError, match="evaluator processes only"):
            task.eval_items("dev")
        assert [p.id for p in task.train_pool()] == [p.id for p in harness.task.train_pool()]
        assert not {"t-dup-0", "t-dup-1"} & {p.id for p in task.train_pool()}
        assert task.digest == harness.contract.task_source.digest
        assert node.seal_problems() == []


# A node's process as an agent's tools run in it, then the strings it still holds, hashed.
_NODE = """
import gc, hashlib, json, sys
from rsi_master.expos import Caller, ExpOS
run_dir, gate_process = sys.argv[1], sys.argv[2] == "1"
with ExpOS.open(run_dir, gate_process=gate_process) as x:
    w = Caller("worker", "w1")
    x.call(w, "data.generate", {"family": "answer_only", "n": 40, "seed": 2})
    x.call(w, "data.register", {"rows": [{"prompt": "What is two and two?", "completion": " 4"}], "source": "hand-written"})
    x.call(Caller("reviewer", "r1"), "audit.run", {})
    gc.collect()
    # Every string reachable from a tracked object (dicts and tuples of strings alone are not
    # tracked, so they are reached through what holds them).
    seen, visited, todo = set(), set(), list(gc.get_objects())
    while todo:
        obj = todo.pop()
        if id(obj) in visited:
            continue
        visited.add(id(obj))
        if isinstance(obj, str):
            if len(obj) >= 8:
                seen.add(hashlib.sha256(obj.encode()).hexdigest())
        elif not isinstance(obj, (bytes, int, float, type(None))):
            todo.extend(gc.get_referents(obj))
    print(json.dumps(sorted(seen)))
"""


@pytest.mark.heavy
def test_a_node_process_holds_no_protected_item_after_its_tools_ran(arithmetic):
    harness = arithmetic
    protected = {
        hashlib.sha256(i.prompt.encode()).hexdigest() for s in SPLITS for i in harness.protected_task().eval_items(s)
    }

    def held(gate_process: bool) -> set[str]:
        out = subprocess.run(
            [sys.executable, "-c", _NODE, str(harness.run.path), "1" if gate_process else "0"],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        return set(json.loads(out.stdout.strip().splitlines()[-1]))

    # The control: drawn in-process (as the harness does), the items are in the heap, so the scan sees them.
    assert held(False) & protected
    assert not held(True) & protected
