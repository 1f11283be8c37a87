"""The keep policy: unreferenced intermediate checkpoints are pruned with a ledger record;
protected ones never are; verify and audit stay clean and say what was pruned."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rsi_master.expos import Caller, ExpOS, audit, protected_checkpoints, prune_checkpoints
from rsi_master.expos._state import experiment_id
from rsi_master.rundir import verify_run

HARNESS = {"role": "harness", "id": "harness"}
MAIN = Caller("main", "main")


def _checkpoint(expos: ExpOS, tmp: Path, name: str) -> str:
    """A stored checkpoint directory of its own: the base's files plus one weight file."""
    d = tmp / name
    base = expos.run.store.path(expos.contract.base_model_artifact)
    d.mkdir()
    for f in base.iterdir():
        (d / f.name).write_bytes(f.read_bytes())
    (d / "model.safetensors").write_bytes(name.encode() * 1000)
    return expos.run.store.put_dir(d, move=True)


def _experiment(expos: ExpOS, ckpt: str, worker: str = "w1") -> str:
    actor = {"role": "worker", "id": worker}
    start = expos.record(
        actor,
        "experiment.start",
        {
            "parent": "base",
            "parent_checkpoint": expos.contract.base_model_artifact,
            "dataset": "0" * 64,
            "method": "sft",
            "spec": {"max_steps": 1},
        },
    )
    xid = experiment_id(start.seq)
    expos.record(
        actor,
        "experiment.finish",
        {"experiment_id": xid, "status": "completed", "checkpoint": ckpt, "steps": 1},
        [{"digest": ckpt, "role": "output", "name": "checkpoint"}],
    )
    return xid


def _eval(expos: ExpOS, xid: str, ckpt: str, split: str) -> int:
    c = expos.contract
    record = expos.run.store.put_bytes(f"record {xid} {split}".encode())
    ev = expos.record(
        {"role": "worker" if split == "dev" else "reviewer", "id": "w1" if split == "dev" else "r1"},
        "eval.record",
        {
            "experiment_id": xid,
            "split": split,
            "score": 0.5,
            "n_samples": len(c.evaluator.sample_ids[split]),
            "checkpoint_digest": ckpt,
            "evaluator_digest": c.evaluator.evaluator_digest,
            "template_digest": c.evaluator.template_sha256,
            "decoding": c.evaluator.decoding,
            "stop": c.evaluator.stop,
            "sample_ids_sha256": "2" * 64,
            "sample_ids_match": True,
            "tokenizer_digest": c.base_tokenizer_sha256,
            "generation_config_digest": c.base_generation_config_sha256,
            "record_digest": record,
        },
        [{"digest": ckpt, "role": "input", "name": "checkpoint"}, {"digest": record, "role": "output", "name": "r"}],
    )
    return ev.seq


@pytest.fixture
def run(tmp_path):
    expos = ExpOS.create(tmp_path / "run", "knowledge", eval_limit=3)
    tmp = tmp_path / "ckpts"
    tmp.mkdir()
    ck = {n: _checkpoint(expos, tmp, n) for n in ("review", "cited", "evidence", "selected", "dev_only", "plain")}
    x = {n: _experiment(expos, d) for n, d in ck.items()}
    for n in ck:
        _eval(expos, x[n], ck[n], "dev")
    _eval(expos, x["review"], ck["review"], "review")
    expos.call(MAIN, "decision.record", {"action": "continue", "rationale": f"build on {x['cited']}", "evidence": []})
    dev_seq = _eval(expos, x["evidence"], ck["evidence"], "dev")
    expos.call(MAIN, "decision.record", {"action": "verify", "rationale": "look", "evidence": [dev_seq]})
    expos.record(
        HARNESS,
        "harness.select",
        {
            "rule": "test",
            "selected": x["selected"],
            "checkpoint": ck["selected"],
            "review_score": None,
            "hacking_rate": 0.0,
            "blocked_attempts": 0,
            "flagged": [],
            "submissions": [],
        },
    )
    yield expos, ck, x
    expos.close()


def test_pruning_keeps_every_protected_checkpoint(run):
    expos, ck, x = run
    why = protected_checkpoints(expos.reader)
    assert why[x["review"]] == ["evaluated on review"]
    assert why[x["selected"]] == ["selected"]
    assert any(r.startswith("cited by decision") for r in why[x["cited"]])
    assert any(r.startswith("cited by decision") for r in why[x["evidence"]])
    payload = prune_checkpoints(expos, HARNESS, "referenced")
    assert payload is not None
    assert sorted(p.experiment_id for p in payload.pruned) == sorted([x["dev_only"], x["plain"]])
    assert payload.bytes_freed == (len("dev_only") + len("plain")) * 1000  # their own weight files, nothing shared
    store = expos.run.store
    for name in ("review", "cited", "evidence", "selected"):
        assert (store.path(ck[name]) / "model.safetensors").is_file()
    for name in ("dev_only", "plain"):
        assert store.is_pruned(ck[name]) and store.has(ck[name])
    # The base shares its files with every checkpoint: still whole.
    base = store.path(expos.contract.base_model_artifact)
    assert all(f.is_file() for f in base.iterdir())
    # Recorded once, by the harness.
    [event] = expos.own_events("artifact.prune")
    assert event.payload["policy"] == "referenced"
    assert prune_checkpoints(expos, HARNESS, "referenced") is None  # nothing left to prune
    assert prune_checkpoints(expos, HARNESS, "all") is None


def test_verify_and_audit_stay_clean_and_say_what_was_pruned(run):
    expos, _ck, _x = run
    prune_checkpoints(expos, HARNESS, "referenced")
    report = verify_run(expos.run.path, key_dir=expos.run.key_dir)
    assert report.ok, report.problems
    assert any("2 checkpoint(s) pruned by the keep policy" in n for n in report.notes)
    assert audit(expos).run_dir_issues == []
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rsi_master.cli",
            "verify",
            str(expos.run.path),
            "--key-dir",
            str(expos.run.key_dir.path),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and "pruned by the keep policy" in proc.stdout


def test_a_pruned_checkpoint_is_refused_not_loaded(run):
    from rsi_master.errors import ArtifactError

    expos, ck, _x = run
    prune_checkpoints(expos, HARNESS, "referenced")
    with pytest.raises(ArtifactError, match="was pruned"):
        expos.run.store.path(ck["plain"])


def test_a_prune_marker_without_a_record_is_a_problem(run):
    """An agent with a shell cannot hide a checkpoint by marking it pruned: verify flags the marker."""
    expos, ck, _x = run
    root = expos.run.store.root
    code = (
        "import sys, pathlib; p = pathlib.Path(sys.argv[1]) / 'pruned'; p.mkdir(exist_ok=True); "
        "(p / sys.argv[2]).write_bytes(b'')"
    )
    subprocess.run([sys.executable, "-c", code, str(root), ck["review"]], check=True)
    report = verify_run(expos.run.path, key_dir=expos.run.key_dir)
    assert not report.ok
    assert any("without a recorded artifact.prune" in str(p) for p in report.problems)


def test_unknown_policy_is_refused(run):
    expos, _, _ = run
    with pytest.raises(ValueError, match="unknown keep policy 'some'"):
        prune_checkpoints(expos, HARNESS, "some")
