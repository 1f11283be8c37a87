"""`verify` checks every stored directory the ledger knows of, submitted or not: a checkpoint
whose tree and blobs are removed, its manifest kept, is named (the removal done by another
process, as an agent with write access to the store would)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rsi_master.expos import Budget, ExpOS
from rsi_master.expos._audit import audit
from rsi_master.rundir import verify_run
from rsi_master.sim import generate_world

TRAIN = {"learning_rate": 3e-4, "batch_size": 16, "max_steps": 400}

# The attacker: removes a stored directory's tree and, with `blobs`, every member blob,
# leaving its manifest blob in place.
REMOVE = r"""
import os, shutil, sys
store, digest, blobs = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
manifest = os.path.join(store, "objects", digest[:2], digest[2:])
members = [line.split("\t")[1] for line in open(manifest).read().splitlines()]
tree = os.path.join(store, "trees", digest)
if sys.argv[4] == "tree":
    for d, _, _ in os.walk(tree):
        os.chmod(d, 0o755)
    shutil.rmtree(tree)
if blobs:
    for m in members:
        p = os.path.join(store, "objects", m[:2], m[2:])
        os.chmod(os.path.dirname(p), 0o755)
        os.unlink(p)
"""


@pytest.fixture
def experiment(tmp_path: Path) -> tuple[Path, str]:
    """A simulated run with one completed, never submitted experiment: (run dir, its checkpoint)."""
    land = generate_world(5)
    with ExpOS.create(tmp_path / "run", land.task_name, world=land, budget=Budget(max_train_steps=3000)) as x:
        w = x.authenticate(x.issue("worker", "w1"))
        family = next(iter(land.families()))
        ds = x.call(w, "data.generate", {"family": family, "n": x.contract.budget.max_rows, "seed": 1})
        res = x.call(
            w, "experiment.submit", {"parent": "base", "dataset": ds.dataset, "method": "sft", "config": TRAIN}
        )
        assert res.status == "completed" and not x.projection().state.submissions
    assert verify_run(tmp_path / "run").ok
    return tmp_path / "run", res.checkpoint


def _remove(run_dir: Path, digest: str, *, tree: bool, blobs: bool) -> None:
    args = [str(run_dir / "artifacts"), digest, "1" if blobs else "0", "tree" if tree else "keep"]
    subprocess.run([sys.executable, "-c", REMOVE, *args], check=True)


def test_an_unsubmitted_checkpoint_removed_but_for_its_manifest_is_named_by_verify_and_audit(experiment):
    run_dir, ckpt = experiment
    _remove(run_dir, ckpt, tree=True, blobs=True)
    res = subprocess.run(
        [sys.executable, "-m", "rsi_master.cli", "verify", str(run_dir), "--json"], capture_output=True, text=True
    )
    assert res.returncode != 0
    problems = json.loads(res.stdout)["problems"]
    assert any(
        p.startswith(f"artifact {ckpt}: stored directory missing") and "files are missing too" in p for p in problems
    )
    with ExpOS.open(run_dir, writable=False) as x:
        report = audit(x)
    assert any(ckpt in i and "stored directory missing" in i for i in report.run_dir_issues)


def test_a_tree_removed_with_its_blobs_kept_is_named(experiment):
    run_dir, ckpt = experiment
    _remove(run_dir, ckpt, tree=True, blobs=False)
    (problem,) = verify_run(run_dir).problems
    assert problem.where == f"artifact {ckpt}"
    assert problem.what == "stored directory missing: its tree is gone, only its manifest remains"


def test_member_blobs_removed_under_a_kept_tree_are_named(experiment):
    run_dir, ckpt = experiment
    _remove(run_dir, ckpt, tree=False, blobs=True)
    problems = verify_run(run_dir).problems
    # Every tree that shares a removed blob (the base model's config) is named with the checkpoint.
    assert f"artifact {ckpt}" in {p.where for p in problems}
    assert all(p.what.startswith("file ") and p.what.endswith(" is missing from the store's objects") for p in problems)
