"""`data.sample`: rejection sampling and self_distillation on the task's `train` pool.

A Worker names a sampling family of the task (`self_distill`: completions the task's scorer
passes; `sample_pairs`: a passing and a failing completion of one prompt, for DPO) and a
checkpoint it may train from (`base` or an experiment of its lineage: the same guard as an
experiment's parent). The harness draws pool prompts, samples from a measured private copy of
that checkpoint in a child process, scores every completion with the task's scorer, leaves out
rows the contamination gate fails, and registers the rest through the same gate as every
dataset. No split is named anywhere: the prompts come from the pool alone, and the pool holds
no item that repeats a protected one."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

from pydantic import Field

from ..events import DataSample, JsonObject, Name
from ..tasks import sample_items, sampled_rows, validate_params
from ._contamination_gate import failing_rows
from ._context import ToolContext
from ._deadline import seconds_left
from ._errors import NothingSampled, ToolFailed, ToolInvalid, ToolRefused
from ._experiments import _intact, _parent
from ._registry import tool
from ._taxonomy import Subcategory
from ._tools_worker import DatasetResult, _family, _In, _measured, _register

if TYPE_CHECKING:
    from ..tasks import FileTask
    from ._caller import Caller


class SampleInput(_In):
    family: Name = Field(
        description="A sampling family of the run's task (`self_distill` or `sample_pairs`, or `task/family`); "
        "only the contract's allowed families are accepted."
    )
    params: JsonObject = Field(
        default_factory=dict,
        description="Knob values of the family (prompts, samples_per_prompt, temperature, keep_per_prompt); "
        "omitted knobs take their defaults.",
    )
    n: int = Field(ge=1, description="Most rows to keep (at most the contract's rows per dataset).")
    seed: int = Field(default=0, ge=0, description="Seed of the prompts drawn and of the sampling.")
    parent: Name = Field(
        default="base", description="`base` or the id of a completed experiment of your lineage to sample from."
    )


class SampledDataset(DatasetResult):
    prompts: int = Field(description="Pool prompts sampled on.")
    sampled: int = Field(description="Completions sampled.")
    passing: int = Field(description="Completions the task's scorer passed.")
    prompts_passing: int = Field(description="Prompts with at least one passing completion.")


@tool("data.sample", roles=("worker",), kind="launching", input=SampleInput, result=SampledDataset)
def data_sample(ctx: ToolContext, caller: Caller, inp: SampleInput) -> SampledDataset:
    """Sample completions from a checkpoint on train-pool prompts and register those the task's scorer keeps."""
    from ..runtime import (
        CheckpointLoadError,
        InputChangedError,
        InvalidParameterError,
        TrainingError,
        is_chat,
        sample,
    )

    task_name, family = _family(ctx, inp.family)
    source = f"{task_name}/{family}"
    # Only a task directory's train pool offers sampling families (checked below).
    task = cast("FileTask", ctx.task)
    fam = task.generators().get(family)
    sampling = sorted(name for name, f in task.generators().items() if f.source == "checkpoint")
    if fam is None or fam.source != "checkpoint":
        raise ToolInvalid(f"{family!r} is not a sampling family of task {task_name}; sampling families: {sampling}")
    if source not in ctx.contract.allowed_generators:
        raise ToolRefused(f"generator {source} is not on the contract's allow-list", Subcategory.TEACHER_AUTHORIZATION)
    if inp.n > ctx.contract.budget.max_rows:
        raise ToolRefused(f"n={inp.n} exceeds the contract's {ctx.contract.budget.max_rows} rows per dataset")
    try:
        params = validate_params(family, fam.knobs, inp.params)
    except ValueError as exc:
        raise ToolInvalid(f"invalid sampling parameters: {exc}") from None
    st = ctx.state()
    parent_ckpt, parent = _parent(ctx, caller, st, inp.parent)
    if not _intact(ctx, parent_ckpt):
        ctx.guard(f"checkpoint {parent_ckpt[:12]} was modified on disk", Subcategory.WEIGHT_PROVENANCE)
    items = sample_items(task, params, inp.seed)
    # Bounded by the caller's deadline (its scheduler-recorded allowance): sampling has no fixed size.
    left = seconds_left(ctx, caller)
    if left is not None and left <= 0:
        raise ToolFailed(f"{caller.role} {caller.id}'s deadline has passed ({-left:.0f}s ago): nothing sampled")
    try:
        res = sample(
            ctx.store.path(parent_ckpt),
            [item.prompt for item in items],
            samples=int(params["samples_per_prompt"]),
            max_new_tokens=task.decoding.max_new_tokens,
            temperature=float(params["temperature"]),
            top_p=task.decoding.top_p,
            stop=tuple(task.stop),
            seed=inp.seed,
            chat=is_chat(task),
            time_limit_s=left,
        )
    except InputChangedError as exc:
        ctx.guard(str(exc), Subcategory.WEIGHT_PROVENANCE)
        raise ToolFailed(str(exc)) from None  # a policy that waives the guard: still nothing to register
    except InvalidParameterError as exc:
        raise ToolInvalid(str(exc)) from None
    except (CheckpointLoadError, TrainingError) as exc:
        raise ToolFailed(f"sampling failed: {exc}") from None
    if res.checkpoint_digest != parent_ckpt:
        ctx.guard(
            f"sampling loaded checkpoint bytes measuring {res.checkpoint_digest}, not {parent_ckpt}",
            Subcategory.WEIGHT_PROVENANCE,
        )
    if not res.outputs:
        raise ToolFailed(
            f"{family}: the caller's deadline came before one prompt was sampled ({left or 0.0:.0f}s left)"
        )
    rows, counts = sampled_rows(task, family, items[: len(res.outputs)], res.outputs, params)
    rows = [{**row, "id": f"{task_name}/{family}/{inp.seed}/{i}"} for i, row in enumerate(rows[: inp.n])]
    bad = failing_rows(task, rows) if rows else set()
    rows = [row for i, row in enumerate(rows) if i not in bad]
    if not rows:
        raise NothingSampled(
            f"{family}: nothing to register ({counts['passing']} of {counts['sampled']} completions passed the "
            f"task's scorer on {counts['prompts']} prompts); sample more, or from a better checkpoint",
            parent=parent,
            sampled=int(counts["sampled"]),
            passing=int(counts["passing"]),
            prompts=int(counts["prompts"]),
        )
    out = _register(
        ctx,
        caller,
        _measured("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows).encode()),
        model=DataSample,
        source=source,
        fields={
            "params": params,
            "seed": inp.seed,
            "n": inp.n,
            "parent": parent,
            "parent_checkpoint": parent_ckpt,
            "seconds": res.seconds,
            **counts,
            **({"left_out": len(bad)} if bad else {}),
        },
        inputs=[],
        also=[{"digest": parent_ckpt, "role": "input", "name": "parent"}],
    )
    return SampledDataset(
        **out.model_dump(),
        prompts=counts["prompts"],
        sampled=counts["sampled"],
        passing=counts["passing"],
        prompts_passing=counts["prompts_passing"],
    )
