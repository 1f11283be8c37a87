"""Measuring: base scores, learning curves, probes and rescoring, each appended to the
results file as it ends (and skipped when its key is there already, so that a measurement
resumes where it stopped). Every figure comes from the sealed evaluator on the public
splits (reproducible from the code; the docs quote them).

Compute unit: one default experiment = `DEFAULT_EXAMPLES` training examples seen once
(batch 32, lr 1e-3, ~157 optimizer steps, about a minute on 2 cores). Training and
evaluation (torch) are imported only when a measurement runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..tasks import PUBLIC_SEAL_KEY
from ._file import LandscapeError
from ._label import CURVE_BATCH, CurveLabel
from ._results import CurveRow, Row, append_row, read_rows, row_dict, write_rows

__all__ = [
    "CURVE_MULTIPLES",
    "CURVE_SPEC",
    "DEFAULT_BATCH",
    "DEFAULT_EXAMPLES",
    "Measurer",
    "curve_key",
    "parent_label",
    "step_multiple",
]

DEFAULT_EXAMPLES = 5000
DEFAULT_BATCH = 32

# Learning curves: one run per recipe over several default experiments of fresh data, at a
# constant learning rate after warm-up so that the snapshots along the way are points of one
# curve (with a decaying schedule an early snapshot would be a run interrupted mid-schedule).
# Batch 8: at equal examples (equal tokens, equal compute) four times the optimizer steps of
# the default batch 32, which is what a 1M model needs (batch 8 is ahead of batches 32 and 64
# at equal data: docs/tasks.md, "Short recipes").
CURVE_MULTIPLES = (0.5, 1.0, 2.0, 3.0, 5.0)
CURVE_SPEC: dict[str, Any] = {
    "method": "sft",
    "learning_rate": 1e-3,
    "batch_size": CURVE_BATCH,
    "epochs": 1.0,
    "lr_scheduler": "constant_with_warmup",
    "warmup_ratio": 0.03,
    "seed": 0,
}


def step_multiple(step: int, batch: int = CURVE_BATCH) -> float:
    """A curve snapshot's compute: `step` steps of `batch` in default experiments."""
    return round(step * batch / DEFAULT_EXAMPLES, 2)


def curve_key(task: str, label: CurveLabel) -> str:
    """A curve run's key in the results file: `curve/<task>/<label>` (with its `@sS`)."""
    return f"curve/{task}/{label}"


def parent_label(parent: str) -> str:
    """A probe's starting checkpoint in words: `curves/<task>.<label>/snapshots/step-N` is that
    curve's snapshot at N steps of its batch, i.e. a multiple of the default experiment."""
    path = Path(parent)
    if path.parent.name == "snapshots" and path.name.startswith("step-"):
        run = CurveLabel.parse(path.parent.parent.name.split(".", 1)[-1])
        return f"SFT {run} x{step_multiple(int(path.name[5:]), run.batch):g} snapshot"
    return path.parent.name if path.name == "checkpoint" else path.name


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


@dataclass
class Measurer:
    """Where measurements go: `results` (the tracked raw figures, a few KB), `root` (data,
    checkpoints and snapshots: large, not tracked). `eval_limit` scores only the first items
    of a split (a quick check of the machinery; such figures are not the landscape's)."""

    results: Path = Path("benchmarks/landscape/results.jsonl")
    root: Path = Path("runs/landscape")
    eval_limit: int | None = None
    log: Callable[[str], None] = field(default=_log)

    # -- the results file --------------------------------------------------------------------
    def rows(self) -> list[Row]:
        return read_rows(self.results)

    def done(self) -> set[str]:
        return {r.key for r in self.rows()}

    def record(self, row: dict[str, Any]) -> None:
        append_row(self.results, row)

    # -- primitives ----------------------------------------------------------------------------
    def evaluate(self, checkpoint: Path | str, task: str, split: str) -> Any:
        from ..runtime import evaluate

        return evaluate(checkpoint, task, split, seal_key=PUBLIC_SEAL_KEY, max_samples=self.eval_limit)

    def dataset(self, task: str, family: str, params: dict[str, Any], seed: int, n: int) -> Path:
        from ..runtime import generate

        path = self.root / "data" / f"{task}.{CurveLabel.of(family, params)}.s{seed}.n{n}.jsonl"
        if not path.is_file():
            generate(task, family, params, seed, n, path)
        return path

    @staticmethod
    def tokens_seen(run_dir: Path) -> int | None:
        logs = [json.loads(x) for x in (run_dir / "train_log.jsonl").read_text().splitlines() if x.strip()]
        counts = [e["num_tokens"] for e in logs if "num_tokens" in e]
        return int(counts[-1]) if counts else None

    def curve_dir(self, task: str, label: CurveLabel) -> Path:
        """Where a curve run keeps its checkpoint and snapshots (`<task>.<label>`, with `@sS`)."""
        return self.root / "curves" / f"{task}.{label}"

    # -- measurements ----------------------------------------------------------------------------
    def base(self, task: str) -> None:
        from ..runtime import base_model_dir

        for split in ("dev", "final"):
            r = self.evaluate(base_model_dir(), task, split)
            self.record(
                {
                    "key": f"base/{task}/{split}",
                    "kind": "base",
                    "task": task,
                    "split": split,
                    "score": r.score,
                    "eval_seconds": r.seconds,
                    "checkpoint_digest": r.checkpoint_digest,
                    "evaluator_digest": r.evaluator_digest,
                }
            )
            self.log(f"base {task} {split}: {r.score:.3f}")

    def curve(
        self,
        task: str,
        label: CurveLabel,
        multiples: Sequence[float] = CURVE_MULTIPLES,
        params: dict[str, Any] | None = None,
    ) -> None:
        """One run with snapshots at `multiples` default experiments (the last is its length).
        The label's seed draws both the data and the run's training order and initial state
        (a repeat of the same curve: the landscape averages a curve's seeds); its method
        `lora` trains adapters (rank 16, merged at each snapshot) with the same spec; its
        batch another batch size (compute is still counted in examples)."""
        from ..runtime import train

        if not multiples or min(multiples) <= 0:
            raise LandscapeError("a curve needs at least one positive multiple")
        multiples = sorted(multiples)
        batch, seed = label.batch, label.seed
        n = max(1, int(DEFAULT_EXAMPLES * multiples[-1]))
        data = self.dataset(task, label.family, params or {}, seed, n)
        run_dir = self.curve_dir(task, label)
        steps = {m: max(1, round(m * DEFAULT_EXAMPLES / batch)) for m in multiples}
        total = -(-n // batch)
        t0 = time.time()
        spec = {
            **CURVE_SPEC,
            "method": label.method,
            "seed": seed,
            "batch_size": batch,
            "prompt_loss": label.prompt_loss,
        }
        result = train(data, run_dir, spec, snapshot_steps=sorted({s for s in steps.values() if s < total}))
        points = []
        for m, s in steps.items():
            ckpt = run_dir / "checkpoint" if s >= total else run_dir / "snapshots" / f"step-{s:06d}"
            ev = self.evaluate(ckpt, task, "dev")
            points.append({"multiple": m, "step": min(s, total), "examples": min(s, total) * batch, "score": ev.score})
            self.log(f"curve {task}/{label.curve} seed {seed} x{m}: {ev.score:.3f}")
        self.record(
            {
                "key": curve_key(task, label),
                "kind": "curve",
                "task": task,
                "family": label.family,
                "label": str(label.curve),
                "params": params or {},
                "spec": spec,
                "seed": seed,
                "points": points,
                "train_seconds": result.train_seconds,
                "tokens": self.tokens_seen(run_dir),
                "wall_seconds": round(time.time() - t0, 1),
                "complete": True,
            }
        )

    def probe(
        self,
        task: str,
        family: str,
        *,
        method: str = "sft",
        batch_size: int = DEFAULT_BATCH,
        lr: float = 1e-3,
        scheduler: str = "cosine",
        multiple: float = 1.0,
        examples: int | None = None,
        parent: str | None = None,
    ) -> None:
        """One experiment of a given recipe at a given compute (a point off the curves)."""
        from ..runtime import train

        n = examples or int(DEFAULT_EXAMPLES * multiple)
        data = self.dataset(task, family, {}, 2, n)
        start = Path(parent) if parent else None
        name = f"{task}.{family}.{method}.b{batch_size}.lr{lr}.{scheduler}.n{n}" + (
            f".from-{start.parent.parent.name}-{start.name}" if start else ""
        )
        run_dir = self.root / "probes" / name
        spec: dict[str, Any] = {
            "method": method,
            "batch_size": batch_size,
            "learning_rate": lr,
            "epochs": 1.0,
            "lr_scheduler": scheduler,
            "warmup_ratio": 0.03,
            "seed": 0,
        }
        if method in ("dpo", "grpo"):
            spec["task"] = task
        result = train(data, run_dir, spec, parent=start)
        ev = self.evaluate(result.checkpoint_dir, task, "dev")
        self.record(
            {
                "key": f"probe/{name}",
                "kind": "probe",
                "task": task,
                "family": family,
                "spec": spec,
                "examples": n,
                "multiple": multiple,
                "steps": result.steps,
                "train_seconds": result.train_seconds,
                "tokens": self.tokens_seen(run_dir),
                "score": ev.score,
                "parent": str(start) if start else "base",
            }
        )
        self.log(f"probe {name}: {ev.score:.3f}")

    def rescore(self, keys: Sequence[str]) -> None:
        """Re-evaluate recorded curve runs from their kept snapshots (after an evaluator
        change, say a longer `max_new_tokens`) and rewrite their points in place; training is
        not redone. Rewrites the results file: run it while nothing else appends to it."""
        rows = self.rows()
        by_key = {r.key: i for i, r in enumerate(rows)}
        for key in keys:
            rec = rows[by_key[key]] if key in by_key else None
            if not isinstance(rec, CurveRow):
                raise LandscapeError(f"{key}: no curve record with that key in {self.results}")
            run_dir = self.curve_dir(rec.task, CurveLabel.parse(rec.curve).with_seed(rec.seed))
            points, ev = [], None
            for p in rec.points:
                snap = run_dir / "snapshots" / f"step-{p.step:06d}"
                ckpt = snap if snap.is_dir() else run_dir / "checkpoint"
                if not ckpt.is_dir():
                    raise LandscapeError(f"{key}: {snap} and {ckpt} are gone; measure the curve again instead")
                ev = self.evaluate(ckpt, rec.task, "dev")
                self.log(f"rescore {key} x{p.multiple}: {p.score:.3f} -> {ev.score:.3f}")
                points.append({**p.model_dump(exclude_unset=True), "score": ev.score})
            rescored = {
                "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "evaluator_digest": ev.evaluator_digest if ev else None,
                "decoding": ev.decoding if ev else None,
            }
            rows[by_key[key]] = CurveRow.model_validate({**row_dict(rec), "points": points, "rescored": rescored})
        write_rows(self.results, rows)
