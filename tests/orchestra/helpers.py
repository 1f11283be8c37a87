"""Fixtures for orchestra tests: runs with fake experiments recorded straight into the
ledger (so that graph and policy tests need no training), and a Worker that only sleeps."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from rsi_master.expos import Caller, ExpOS
from rsi_master.orchestra import NodeContext
from rsi_master.orchestra._graph import ORCHESTRA

MAIN = Caller("main", "main")


def new_run(
    tmp_path: Path,
    task: str = "knowledge",
    *,
    budget_s: float = 100.0,
    slots: int = 2,
    main: str = "policy",
    name: str = "run",
    prior: Any = None,
    seed: int = 0,
    eval_limit: int = 5,
    guards: Any = None,
    timing_prior: dict[str, float] | None = None,
) -> ExpOS:
    """A run as `start_run` records it; `prior` (a landscape file, `shipped` or a `Landscape`)
    is stored in it and named in its settings, as `start_run(RunSpec(prior=...))` does."""
    from rsi_master.orchestra._prior import read_prior, store_prior

    expos = ExpOS.create(tmp_path / name, task, eval_limit=eval_limit, guards=guards)
    settings: dict[str, Any] = {
        "version": 1,
        "task": task,
        "budget_s": budget_s,
        "slots": slots,
        "seed": seed,
        "main": main,
        "reviewer": "evidence",
        "eval_limit": eval_limit,
    }
    if prior is not None:
        settings["prior"] = store_prior(expos.reader, read_prior(prior))
    if timing_prior is not None:
        settings["timing_prior"] = timing_prior
    expos.record(ORCHESTRA, "orchestra.start", settings)
    return expos


def fake_experiment(
    expos: ExpOS, worker: str, dev: float, *, review: float | None = None, parent: str = "base", steps: int = 20
) -> str:
    """An experiment recorded as if it had run: start, finish (a copy of the base weights with a
    marker file as its checkpoint: each fake experiment has bytes of its own, as trained ones do),
    a dev record and optionally a review record. For policy tests only."""
    import shutil
    import uuid

    from rsi_master.expos._state import experiment_id

    actor = {"role": "worker", "id": worker}
    base = expos.contract.base_model_artifact
    tmp = expos.scratch()
    try:
        shutil.copytree(expos.run.store.path(base), tmp / "ckpt")
        for p in (tmp / "ckpt").rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        (tmp / "ckpt").chmod(0o755)
        (tmp / "ckpt" / "FAKE_EXPERIMENT").write_text(uuid.uuid4().hex)
        ckpt = expos.run.store.put_dir(tmp / "ckpt", move=True)
    finally:
        expos.drop_scratch(tmp)
    start = expos.record(
        actor,
        "experiment.start",
        {
            "parent": parent,
            "parent_checkpoint": base,
            "dataset": "0" * 64,
            "method": "sft",
            "spec": {"learning_rate": 1e-3, "batch_size": 8, "max_steps": steps},
        },
    )
    xid = experiment_id(start.seq)
    expos.record(
        actor, "experiment.finish", {"experiment_id": xid, "status": "completed", "checkpoint": ckpt, "steps": steps}
    )
    for split, score in (("dev", dev), ("review", review)):
        if score is not None:
            actor = {"role": "worker", "id": worker} if split == "dev" else {"role": "reviewer", "id": "rx"}
            record_eval(expos, actor, xid, split, score, checkpoint=ckpt, record_digest="1" * 64)
    return xid


def record_eval(
    expos: ExpOS,
    actor: dict[str, str],
    xid: str,
    split: str,
    score: float,
    *,
    checkpoint: str,
    record_digest: str,
    n_samples: int | None = None,
) -> None:
    """An `eval.record` of `xid` on `split` as the contract's evaluator would write it (its digests,
    decoding and stop), with the given score, checkpoint and stored record. For policy tests only."""
    c = expos.contract
    expos.record(
        actor,
        "eval.record",
        {
            "experiment_id": xid,
            "split": split,
            "score": score,
            "n_samples": len(c.evaluator.sample_ids[split]) if n_samples is None else n_samples,
            "checkpoint_digest": checkpoint,
            "evaluator_digest": c.evaluator.evaluator_digest,
            "template_digest": c.evaluator.template_sha256,
            "decoding": c.evaluator.decoding,
            "stop": c.evaluator.stop,
            "sample_ids_sha256": "2" * 64,
            "sample_ids_match": True,
            "tokenizer_digest": c.base_tokenizer_sha256,
            "generation_config_digest": c.base_generation_config_sha256,
            "record_digest": record_digest,
        },
    )


def finalize(expos: ExpOS, worker: str, xid: str, dev: float, recipe: dict[str, Any] | None = None) -> int:
    expos.call(
        Caller("worker", worker),
        "worker.finalize",
        {
            "summary": f"best {xid}",
            "claims": [{"experiment_id": xid, "score": dev}],
            "candidates": [xid],
            "recipe": recipe,
        },
    )
    return expos.run.ledger.size() - 2  # the finalize event precedes its tool.call record


class SleepWorker:
    """Occupies its slot until its deadline (at most 3 s), then finalizes with nothing."""

    def run(self, ctx: NodeContext) -> None:
        time.sleep(max(0.0, min(3.0, ctx.time_left() - 0.2)))
        ctx.call("worker.finalize", {"summary": "slept", "claims": [], "candidates": []})


class CrashWorker:
    def run(self, ctx: NodeContext) -> None:
        raise RuntimeError("framework fault")


class LongSleepWorker:
    """Occupies its slot until its deadline (at most 15 s), then finalizes with nothing."""

    def run(self, ctx: NodeContext) -> None:
        time.sleep(max(0.0, min(15.0, ctx.time_left() - 0.2)))
        ctx.call("worker.finalize", {"summary": "slept", "claims": [], "candidates": []})


class KilledWorker:
    """Its process is SIGKILLed mid-node, as by the OOM killer or an operator."""

    def run(self, ctx: NodeContext) -> None:
        os.kill(os.getpid(), signal.SIGKILL)


class FillMain:
    """Keeps every slot busy with SleepWorkers; records one decision per event."""

    def start(self, ctx: Any, graph: Any) -> None:
        self.on_idle(ctx, graph, ctx.slots)

    def on_event(self, ctx: Any, graph: Any, event: tuple[int, str, str]) -> None:
        ctx.call(
            "decision.record",
            {
                "action": "continue",
                "rationale": "keep going",
                "evidence": [event[0]],
                "detail": {},
                "answers": event[0],
            },
        )

    def on_idle(self, ctx: Any, graph: Any, free_slots: int) -> bool:
        for _ in range(free_slots):
            wid = f"s{len(graph.workers) + 1}"
            ctx.call(
                "worker.add",
                {"worker_id": wid, "task": "sleep", "direction": {"family": "answer_only", "agent": self.agent}},
            )
            graph.workers[wid] = None
        ctx.call("decision.record", {"action": "branch", "rationale": "fill the slots", "evidence": []})
        return True

    agent = "tests.orchestra.helpers:SleepWorker"

    def finish(self, ctx: Any, graph: Any, reason: str) -> None:
        ctx.call("decision.record", {"action": "stop", "rationale": reason, "evidence": []})


class CrashMain(FillMain):
    agent = "tests.orchestra.helpers:CrashWorker"

    def on_idle(self, ctx: Any, graph: Any, free_slots: int) -> bool:
        if graph.workers:
            return False
        return super().on_idle(ctx, graph, 1)


class KilledMain(CrashMain):
    agent = "tests.orchestra.helpers:KilledWorker"


class LongFillMain(FillMain):
    agent = "tests.orchestra.helpers:LongSleepWorker"
