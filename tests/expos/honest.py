"""An honest ExpOS run, built once per test session and backend, and copied for each attack."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from rsi_master.expos import Budget, Caller, ExpOS
from rsi_master.sim import SimWorld

TASK = "arithmetic"
MAIN = Caller("main", "main")
W1 = Caller("worker", "w1")
W2 = Caller("worker", "w2")
REVIEWER = Caller("reviewer", "r1")
QUICK = {"max_steps": 3, "batch_size": 8, "learning_rate": 1e-3}


@dataclass
class Honest:
    path: Path
    key_dir: Path
    exp1: str
    exp2: str
    dataset1: str
    dataset2: str
    simulated: bool = False

    @property
    def weights_file(self) -> str:
        """The file of a checkpoint that holds its weights (the simulator's stand-in state)."""
        return "sim_checkpoint.json" if self.simulated else "model.safetensors"

    def copy(self, dest: Path) -> ExpOS:
        """A copy with its own key directory: copies share the run id, and the witness a
        longer copy leaves would (rightly) make a shorter one look rolled back."""
        shutil.copytree(self.path, dest)
        keys = dest.parent / "keys"
        shutil.copytree(self.key_dir, keys)
        os.environ["RSI_MASTER_KEY_DIR"] = str(keys)
        return ExpOS.open(dest, key_dir=keys)


def build_honest(root: Path, world: SimWorld | None = None) -> Honest:
    """Two workers (w2 continues from w1), a reviewer, a decision, a nomination; on the
    simulated backend when `world` is given (the same tools and records, no training)."""
    key_dir = root / "keys"
    os.environ["RSI_MASTER_KEY_DIR"] = str(key_dir)
    path = root / "run"
    with ExpOS.create(
        path,
        TASK if world is None else world.task_name,
        eval_limit=8,
        key_dir=key_dir,
        allowed_teachers=["hand-written"],
        budget=Budget(max_experiments=30, max_train_steps=50),
        world=world,
    ) as x:
        families = sorted(f.split("/")[1] for f in x.contract.allowed_generators)
        n = min(64, x.contract.budget.max_rows)  # the simulated contract counts rows in bundles
        x.call(MAIN, "worker.add", {"worker_id": "w1", "task": "answer-only data"})
        x.call(MAIN, "worker.add", {"worker_id": "w2", "task": "continue w1", "predecessors": ["w1"]})
        d1 = x.call(W1, "data.generate", {"family": families[0], "n": n, "seed": 1}).dataset
        e1 = x.call(W1, "experiment.submit", {"dataset": d1, "config": QUICK})
        assert e1.status == "completed", e1
        x.call(
            W1,
            "worker.finalize",
            {
                "summary": f"{e1.experiment_id} is my best",
                "claims": [{"experiment_id": e1.experiment_id, "score": e1.dev_score}],
                "candidates": [e1.experiment_id],
            },
        )
        d2 = x.call(W2, "data.generate", {"family": families[-1], "n": n, "seed": 2}).dataset
        e2 = x.call(W2, "experiment.submit", {"parent": e1.experiment_id, "dataset": d2, "config": QUICK})
        assert e2.status == "completed", e2
        x.call(W2, "worker.finalize", {"summary": "continued w1", "candidates": [e2.experiment_id]})
        rq = x.call(
            MAIN, "review.request", {"reviewer_id": "r1", "question": "does w2 beat w1?", "scope": ["w1", "w2"]}
        )
        r1 = x.call(REVIEWER, "eval.review", {"experiment_id": e1.experiment_id})
        r2 = x.call(REVIEWER, "eval.review", {"experiment_id": e2.experiment_id})
        x.call(REVIEWER, "eval.compare", {"experiment_a": e1.experiment_id, "experiment_b": e2.experiment_id})
        x.call(REVIEWER, "audit.run", {})
        x.call(
            REVIEWER,
            "review.submit",
            {
                "request_seq": rq.seq,
                "scope": ["w1", "w2"],
                "verdict": "pass",
                "supported": [f"review scores {r1.score} vs {r2.score}"],
                "evidence": [r1.record_seq, r2.record_seq],
            },
        )
        x.call(MAIN, "decision.record", {"action": "stop", "rationale": "done", "evidence": [rq.seq]})
        x.call(MAIN, "candidate.nominate", {"experiment_id": e2.experiment_id})
    return Honest(path, key_dir, e1.experiment_id, e2.experiment_id, d1, d2, simulated=world is not None)
