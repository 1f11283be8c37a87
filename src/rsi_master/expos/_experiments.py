"""The experiment service: train from a parent on a registered dataset, record the
experiment, evaluate it on `dev`. One implementation for every guard policy: each guard is
asked through `ctx.guard`, which refuses under `Strict` and lets the call go on under
`Unguarded`; the records an honest experiment leaves are the same under both."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from ..errors import ArtifactError, StopRequested
from ..events import DataCheck, ExperimentFinish, ExperimentStart, Measured
from ._context import ToolContext
from ._errors import ToolInvalid, ToolRefused
from ._evaluation import adapter_base_of, measured_digest
from ._state import experiment_id
from ._taxonomy import Subcategory

if TYPE_CHECKING:
    from ._caller import Caller
    from ._state import State

__all__ = ["ExperimentResult", "adopt_checkpoint", "measured_dataset", "rows_of", "run_experiment"]


class ExperimentResult(BaseModel):
    experiment_id: str
    status: Literal["completed", "failed"]
    dev_score: float | None = Field(description="Aggregate score on `dev` (no per-sample detail).")
    steps: int | None = None
    train_seconds: float | None = Field(
        default=None,
        description="Seconds in the training loop (the rest of the call is start-up and the dev evaluation).",
    )
    checkpoint: str | None = None
    same_checkpoint_as: str | None = Field(
        default=None,
        description=(
            "An earlier experiment that ended with the same checkpoint digest (training left the weights where "
            "that one left them): its dev score is this one's, not measured again."
        ),
    )
    error: str | None = None


def measured_dataset(ctx: ToolContext, digest: str) -> bytes:
    """A registered dataset's bytes, read once and refused unless they hash to its digest."""

    try:
        return ctx.store.read_bytes(digest)
    except ArtifactError as exc:
        raise ToolRefused(
            f"dataset {digest[:12]} was modified on disk after registration ({exc})", Subcategory.DATA_PROVENANCE
        ) from None


def rows_of(data: bytes) -> list[dict[str, Any]]:
    from ..runtime import parse_jsonl

    return parse_jsonl(data, "dataset")


def _steps(spec, n_rows: int) -> int:
    if spec.max_steps is not None:
        return spec.max_steps
    return math.ceil(n_rows * spec.epochs / spec.batch_size)


def _parent(ctx: ToolContext, caller: Caller, st: State, parent: str) -> tuple[str, str]:
    """(parent checkpoint digest, lineage note); a checkpoint outside the caller's lineage is a guard's."""
    if parent == "base":
        return ctx.contract.base_model_artifact, "base"
    x = st.experiments.get(parent)
    if x is None or x.status != "completed" or not x.checkpoint:
        raise ToolRefused(f"{parent} is not a completed experiment of this run", Subcategory.WEIGHT_PROVENANCE)
    if x.owner != caller.id and x.owner not in st.predecessors(caller.id):
        ctx.guard(f"{parent} belongs to {x.owner}, outside {caller.id}'s lineage", Subcategory.WEIGHT_PROVENANCE)
    return x.checkpoint, parent


def _intact(ctx: ToolContext, digest: str) -> bool:

    return measured_digest(ctx.store, digest) == digest


def _kept(ctx: ToolContext, tmp) -> list[dict[str, str]]:
    """Whatever a stopped run left (config, partial log), stored as evidence."""
    return [
        {"digest": ctx.store.put_file(f, move=True), "role": "output", "name": f.stem}
        for f in (tmp / "out" / "train_config.json", tmp / "out" / "train_log.jsonl")
        if f.is_file()
    ]


def _refuse_started(ctx: ToolContext, caller: Caller, exp_id: str, tmp, inputs, reason: str, sub: Subcategory) -> None:
    """A guard on a started experiment whose inputs were not the measured ones: under a policy
    that refuses, close it as failed and refuse; under one that waives, go on."""
    refusal = ToolRefused(f"{exp_id}: {reason}; nothing was recorded as trained", sub)
    if ctx.guards.waives(refusal):
        return
    ctx.record(
        caller,
        ExperimentFinish(experiment_id=exp_id, status="failed", error=f"refused ({sub.value}): {reason}"[:500]),
        inputs + _kept(ctx, tmp),
    )
    raise refusal


def run_experiment(
    ctx: ToolContext, caller: Caller, *, parent: str, dataset: str, method: str, config: dict[str, Any]
) -> ExperimentResult:
    """Train from `parent` (`base` or an experiment id) on a registered dataset, then evaluate on `dev`."""
    from ..runtime import InputChangedError, InvalidParameterError, make_spec

    c = ctx.contract
    st = ctx.state()
    if len(st.experiments) >= c.budget.max_experiments:
        ctx.guard(f"experiment budget spent ({c.budget.max_experiments})")
    if method not in c.allowed_methods:
        ctx.guard(f"method {method} is not allowed by the contract")
    ds = st.datasets.get(dataset)
    if ds is None:
        ctx.guard(f"dataset {dataset[:12]} was never registered", Subcategory.DATA_PROVENANCE)
    elif ds.verdict not in ("clean", "flagged"):
        ctx.guard(f"dataset {dataset[:12]} is {ds.verdict}", Subcategory.DATA_PROVENANCE)
    parent_ckpt, parent = _parent(ctx, caller, st, parent)
    try:
        spec = make_spec(**{**config, "method": method, "task": c.task})
    except InvalidParameterError as exc:
        raise ToolInvalid(str(exc)) from None
    # A simulated run's row stands for several examples (`simulation.examples_per_row`).
    examples = ds.n_rows * (c.simulation.examples_per_row if c.simulation else 1) if ds is not None else 0
    if ds is not None and _steps(spec, examples) > c.budget.max_train_steps:
        ctx.guard(f"{_steps(spec, examples)} steps exceed the contract's {c.budget.max_train_steps}")
    # The second gate: the bytes checked are read once and must be the registered ones.
    # Training reads its own copy and reports the digest of what it read, which must be
    # this one: equal digests, equal bytes, whatever happens to the store in between.
    recheck = ctx.gate.check(measured_dataset(ctx, dataset))
    ctx.record(
        caller,
        DataCheck(dataset_checked=dataset, gate="before_training", **recheck),
        [{"digest": dataset, "role": "input", "name": "dataset"}],
    )
    if recheck["verdict"] == "failed":
        ctx.guard(f"dataset {dataset[:12]} overlaps protected items", Subcategory.DATA_PROVENANCE)
    if not _intact(ctx, parent_ckpt):  # early: nothing starts from a tampered parent
        ctx.guard(f"parent checkpoint {parent_ckpt[:12]} was modified on disk", Subcategory.WEIGHT_PROVENANCE)

    parent_base = adapter_base_of(ctx.store, parent_ckpt)  # an adapter parent trains on its base

    inputs = [
        {"digest": parent_ckpt, "role": "input", "name": "parent"},
        *([{"digest": parent_base, "role": "input", "name": "parent_base"}] if parent_base else []),
        {"digest": dataset, "role": "input", "name": "dataset"},
    ]
    start = ctx.record(
        caller,
        ExperimentStart(
            parent=parent,
            parent_checkpoint=parent_ckpt,
            dataset=dataset,
            method=method,
            spec=spec.model_dump(mode="json"),
        ),
        inputs,
    )
    exp_id = experiment_id(start.seq)
    store = ctx.store
    tmp = ctx.scratch()
    try:
        try:
            # The run's experiment backend: TRL/PEFT, or the simulated world (same records).
            res = ctx.backend.train(
                ctx,
                store.path(dataset),
                tmp / "out",
                spec,
                store.path(parent_ckpt),
                parent_base=None if parent_base is None else store.path(parent_base),
            )
        except InputChangedError as exc:
            _refuse_started(ctx, caller, exp_id, tmp, inputs, str(exc), Subcategory.WEIGHT_PROVENANCE)
            return _failed(ctx, caller, exp_id, tmp, inputs, exc)
        except StopRequested as exc:  # the node was asked to stop: recorded, then let through
            _failed(ctx, caller, exp_id, tmp, inputs, exc)
            raise
        except Exception as exc:  # the runtime's failure is recorded, never hidden
            return _failed(ctx, caller, exp_id, tmp, inputs, exc)
        # Given a parent, training measures both (the runtime's contract).
        assert res.parent_digest is not None and res.data_digest is not None
        if res.parent_digest != parent_ckpt:
            _refuse_started(
                ctx,
                caller,
                exp_id,
                tmp,
                inputs,
                f"training loaded parent bytes measuring {res.parent_digest}, not {parent_ckpt}",
                Subcategory.WEIGHT_PROVENANCE,
            )
        if res.parent_base_digest != parent_base:
            _refuse_started(
                ctx,
                caller,
                exp_id,
                tmp,
                inputs,
                f"training loaded base bytes measuring {res.parent_base_digest}, not {parent_base}",
                Subcategory.WEIGHT_PROVENANCE,
            )
        if res.data_digest != dataset:
            _refuse_started(
                ctx,
                caller,
                exp_id,
                tmp,
                inputs,
                f"training read data measuring {res.data_digest}, not the checked {dataset}",
                Subcategory.DATA_PROVENANCE,
            )
        ckpt = store.put_dir(res.checkpoint_dir, move=True)
        if ckpt != res.checkpoint_digest:  # written to between the trainer's save and the store
            _refuse_started(
                ctx,
                caller,
                exp_id,
                tmp,
                inputs,
                f"the trained checkpoint measured {res.checkpoint_digest} when saved and {ckpt} when stored",
                Subcategory.WEIGHT_PROVENANCE,
            )
        config_digest = store.put_file(res.config_path, move=True)
        log = store.put_file(res.log_path, move=True)
        ctx.record(
            caller,
            ExperimentFinish(
                experiment_id=exp_id,
                status="completed",
                checkpoint=ckpt,
                steps=res.steps,
                final_loss=res.final_loss,
                train_seconds=round(res.train_seconds, 3),
                # Measured by the runtime on the bytes it trained from (equal to the start's by the checks above).
                measured=Measured(
                    parent_checkpoint=res.parent_digest,
                    dataset=res.data_digest,
                    **({"parent_base": parent_base} if parent_base else {}),
                ),
                **({"adapter_base": res.adapter_base_digest} if res.adapter_base_digest else {}),
            ),
            [
                *inputs,
                {"digest": ckpt, "role": "output", "name": "checkpoint"},
                *(
                    [{"digest": res.adapter_base_digest, "role": "input", "name": "adapter_base"}]
                    if res.adapter_base_digest
                    else []
                ),
                {"digest": config_digest, "role": "output", "name": "train_config"},
                {"digest": log, "role": "output", "name": "train_log"},
            ],
        )
    finally:
        ctx.drop_scratch(tmp)
    # Each checkpoint is scored once: an experiment whose bytes an earlier one already produced
    # has that one's dev record (the ledger's projection shares it), not a second scoring.
    x = ctx.state().experiments[exp_id]
    dev = x.dev_score()
    if dev is None:
        dev = ctx.evaluate(caller, exp_id, ckpt, "dev").payload.score
    return ExperimentResult(
        experiment_id=exp_id,
        status="completed",
        dev_score=dev,
        steps=res.steps,
        train_seconds=round(res.train_seconds, 3),
        checkpoint=ckpt,
        same_checkpoint_as=x.same_checkpoint_as,
    )


def _failed(ctx: ToolContext, caller: Caller, exp_id: str, tmp, inputs, exc: BaseException) -> ExperimentResult:
    msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
    ctx.record(caller, ExperimentFinish(experiment_id=exp_id, status="failed", error=msg), inputs + _kept(ctx, tmp))
    return ExperimentResult(experiment_id=exp_id, status="failed", dev_score=None, error=msg)


def adopt_checkpoint(ctx: ToolContext, caller: Caller, source: Path, origin: str, note: str) -> ExperimentResult:
    """Bring a checkpoint directory trained elsewhere into the run as the caller's experiment
    (only a policy that waives the weight-provenance guard gets here), then evaluate it on `dev`.
    `origin` is recorded in the experiment's spec; the copy holds `note` in a file (`COPIED_FROM`),
    so it has a digest of its own and its evaluations are not counted against the original's."""
    tmp = ctx.scratch()
    try:
        shutil.copytree(source, tmp / "ckpt")
        for p in (tmp / "ckpt").rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        (tmp / "ckpt").chmod(0o755)
        (tmp / "ckpt" / "COPIED_FROM").write_text(f"{note}\n")
        ckpt = ctx.store.put_dir(tmp / "ckpt", move=True)
    finally:
        ctx.drop_scratch(tmp)
    start = ctx.record(
        caller,
        ExperimentStart(
            parent="foreign", parent_checkpoint=ckpt, dataset="", method="copy", spec={"copied_from": origin}
        ),
    )
    xid = experiment_id(start.seq)
    ctx.record(
        caller,
        ExperimentFinish(experiment_id=xid, status="completed", checkpoint=ckpt, steps=0),
        [{"digest": ckpt, "role": "output", "name": "checkpoint"}],
    )
    rec = ctx.evaluate(caller, xid, ckpt, "dev")
    return ExperimentResult(
        experiment_id=xid, status="completed", dev_score=rec.payload.score, steps=0, checkpoint=ckpt
    )
