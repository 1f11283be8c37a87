"""Worker tools that launch: data, experiments (the experiment service: train then evaluate on `dev`),
and the refused checkpoint import. Reading results and finalizing: `_tools_worker_results`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..artifacts import read_measured
from ..events import LIST_MAX, DataFilter, DataGenerate, DataMix, DataRegister, JsonObject, Name, PathText, Payload
from ._context import ToolContext
from ._errors import ToolFailed, ToolInvalid, ToolRefused
from ._experiments import ExperimentResult, adopt_checkpoint, measured_dataset, rows_of, run_experiment
from ._registry import tool
from ._taxonomy import Subcategory

if TYPE_CHECKING:
    from ._caller import Caller

_HEX64 = r"^[0-9a-f]{64}$"


class _In(BaseModel):
    # Strict: a number is a JSON number (no `"5"`, no `true` for 1), as the schema the agents read says.
    model_config = ConfigDict(extra="forbid", strict=True)


# -- data ------------------------------------------------------------------------------
class GenerateInput(_In):
    family: Name = Field(
        description="Generator family of the run's task (`family` or `task/family`); only the "
        "contract's allowed families are accepted."
    )
    params: JsonObject = Field(
        default_factory=dict, description="Knob values of the chosen family; omitted knobs take their defaults."
    )
    n: int = Field(ge=1, description="Number of examples (at most the contract's rows per dataset).")
    seed: int = Field(
        default=0, ge=0, description="Generator seed: the same family, knobs, seed and n give the same dataset."
    )


class RegisterInput(_In):
    rows: list[dict[str, str]] = Field(min_length=1, description="Rows with `prompt` and `completion`.")
    source: Name = Field(description="Declared source: a teacher or source on the contract's allow-list.")


class FilterInput(_In):
    dataset: str = Field(pattern=_HEX64, description="Digest of a registered dataset to filter.")
    max_chars: int | None = Field(default=None, ge=1, description="Drop rows longer than this.")
    verified_only: bool = Field(default=False, description="Keep only rows the task's checker accepts.")


class MixInput(_In):
    datasets: list[Name] = Field(min_length=1, max_length=LIST_MAX, description="Dataset digests to mix.")
    weights: list[float] | None = Field(
        default=None, max_length=LIST_MAX, description="Sampling weights, one per dataset (default equal)."
    )
    n: int = Field(ge=1, description="Rows in the mixed dataset.")
    seed: int = Field(default=0, ge=0, description="Sampling seed.")


class DatasetResult(BaseModel):
    dataset: str = Field(description="Digest of the registered dataset.")
    n_rows: int
    source: str
    contamination: str = Field(description="clean or flagged (failed data is never registered).")


def _family(ctx: ToolContext, name: str) -> tuple[str, str]:
    task = ctx.contract.task
    family = name.split("/", 1)[1] if name.startswith(task + "/") else name
    return task, family


def _measured(data: bytes) -> tuple[bytes, list[dict[str, Any]]]:
    """JSONL bytes and their rows: what `_register` checks is the parse of what it stores."""
    return data, rows_of(data)


def _read(path) -> tuple[bytes, list[dict[str, Any]]]:
    """A scratch JSONL's bytes, read once (a regular file, no link), and those bytes parsed."""

    return _measured(read_measured(path)[0])


def _register(
    ctx: ToolContext,
    caller: Caller,
    measured: tuple[bytes, list[dict[str, Any]]],
    *,
    model: type[Payload],
    source: str,
    fields: dict[str, Any],
    inputs: list[str],
    also: list[dict[str, str]] | None = None,
) -> DatasetResult:
    """Check a dataset for contamination, then store and record it (or refuse).

    `measured`: its bytes and those bytes parsed (`_measured`; `_read` for a scratch file,
    read once): the rows checked and the bytes stored are the same bytes, so a write to a
    scratch file after the check cannot reach the store. `also`: more input artifacts of
    the event (the checkpoint that sampled the rows)."""
    data, rows = measured
    if len(rows) > ctx.contract.budget.max_rows:
        ctx.guard(f"{len(rows)} rows exceed the contract's {ctx.contract.budget.max_rows} per dataset")
    report = ctx.gate.check(data, rows)
    if report["verdict"] == "failed":
        ctx.guard(
            f"data overlaps protected evaluation items ({report['fails']} rows); not registered. "
            f"First match: {report['matches'][0] if report['matches'] else '?'}",
            Subcategory.DATA_PROVENANCE,
        )
    digest = ctx.store.put_bytes(data)
    # The fields past the common ones differ by kind (`fields`), so the payload is validated from a dict.
    ctx.record(
        caller,
        model.model_validate(
            {
                **fields,
                "dataset": digest,
                "source": source,
                "n_rows": len(rows),
                "inputs": inputs,
                "contamination": report,
            }
        ),
        [{"digest": d, "role": "input", "name": "dataset"} for d in inputs]
        + list(also or [])
        + [{"digest": digest, "role": "output", "name": "dataset"}],
    )
    return DatasetResult(dataset=digest, n_rows=len(rows), source=source, contamination=report["verdict"])


def _registered_dataset(ctx: ToolContext, digest: str):
    ds = ctx.state().datasets.get(digest)
    if ds is None:
        raise ToolRefused(f"dataset {digest[:12]} was never registered in this run", Subcategory.DATA_PROVENANCE)
    return ds


def _held_dataset(ctx: ToolContext, digest: str, where) -> Any:
    """A private copy of a dataset holding exactly the measured bytes, for a runtime call."""
    path = where / f"{digest}.jsonl"
    path.write_bytes(measured_dataset(ctx, digest))
    return path


@tool("data.generate", roles=("worker",), kind="launching", input=GenerateInput, result=DatasetResult)
def data_generate(ctx: ToolContext, caller: Caller, inp: GenerateInput) -> DatasetResult:
    """Generate training data with one of the task's generator families and register it."""

    task, family = _family(ctx, inp.family)
    source = f"{task}/{family}"
    families = ctx.generators()
    if "/" not in family and family not in families:
        # A name the task does not have is a mistake to correct, not a generator brought in: another
        # task's generator (`task/family`) or one the contract leaves out is refused below.
        offered = sorted(n for n, f in families.items() if f.source == "generate")
        raise ToolInvalid(f"task {task} has no generator family {family!r}; its families: {', '.join(offered)}")
    if source not in ctx.contract.allowed_generators:
        raise ToolRefused(f"generator {source} is not on the contract's allow-list", Subcategory.TEACHER_AUTHORIZATION)
    if inp.n > ctx.contract.budget.max_rows:
        raise ToolRefused(f"n={inp.n} exceeds the contract's {ctx.contract.budget.max_rows} rows per dataset")
    # The gate runs the generator on the run's sealed task, clear of the protected items (`_gate`).
    spec, left_out, data = ctx.gate.generate(family, dict(inp.params), inp.seed, inp.n)
    return _register(
        ctx,
        caller,
        _measured(data),
        model=DataGenerate,
        source=source,
        fields={
            "params": spec["params"],
            "seed": inp.seed,
            "n": inp.n,
            **({"left_out": left_out} if left_out else {}),
        },
        inputs=[],
    )


@tool("data.register", roles=("worker",), kind="launching", input=RegisterInput, result=DatasetResult)
def data_register(ctx: ToolContext, caller: Caller, inp: RegisterInput) -> DatasetResult:
    """Register hand-made or teacher-labelled rows from a declared, allowed source."""
    import json

    if inp.source not in ctx.contract.allowed_teachers:
        ctx.guard(f"source {inp.source!r} is not an allowed teacher or source", Subcategory.TEACHER_AUTHORIZATION)
    for i, row in enumerate(inp.rows):
        if set(row) != {"prompt", "completion"}:
            raise ToolInvalid(f"row {i} must have exactly `prompt` and `completion`")
    data = "".join(json.dumps(r, sort_keys=True) + "\n" for r in inp.rows).encode()
    return _register(ctx, caller, _measured(data), model=DataRegister, source=inp.source, fields={}, inputs=[])


@tool("data.filter", roles=("worker",), kind="launching", input=FilterInput, result=DatasetResult)
def data_filter(ctx: ToolContext, caller: Caller, inp: FilterInput) -> DatasetResult:
    """Filter a registered dataset (length, checker-verified rows)."""
    from ..runtime import InvalidParameterError, filter_data

    ds = _registered_dataset(ctx, inp.dataset)
    tmp = ctx.scratch()
    try:
        try:
            filter_data(
                _held_dataset(ctx, inp.dataset, tmp),
                tmp / "data.jsonl",
                max_chars=inp.max_chars,
                verified_only=inp.verified_only,
                # Rows that repeat a protected item never passed the gate into a registered dataset.
                drop_eval_overlap=False,
                task=ctx.task,
            )
        except InvalidParameterError as exc:
            raise ToolInvalid(str(exc)) from None
        kept = _read(tmp / "data.jsonl")
        if not kept[1]:
            # An empty dataset registered would only fail later, in the experiment that trains on it.
            raise ToolFailed(f"nothing to register: the filter kept none of the {ds.n_rows} rows; loosen it")
        return _register(
            ctx,
            caller,
            kept,
            model=DataFilter,
            source=ds.source,
            fields={"max_chars": inp.max_chars, "verified_only": inp.verified_only},
            inputs=[inp.dataset],
        )
    finally:
        ctx.drop_scratch(tmp)


@tool("data.mix", roles=("worker",), kind="launching", input=MixInput, result=DatasetResult)
def data_mix(ctx: ToolContext, caller: Caller, inp: MixInput) -> DatasetResult:
    """Mix registered datasets by weight into a new one."""
    from ..runtime import InvalidParameterError, jsonl_bytes, mix_rows

    sources = sorted({_registered_dataset(ctx, d).source for d in inp.datasets})
    try:
        # Each input is the registered bytes, read once and refused unless they hash to its digest.
        rows, _, _ = mix_rows(
            [rows_of(measured_dataset(ctx, d)) for d in inp.datasets], inp.weights, inp.n, inp.seed, inp.datasets
        )
    except InvalidParameterError as exc:
        raise ToolInvalid(str(exc)) from None
    return _register(
        ctx,
        caller,
        _measured(jsonl_bytes(rows)),
        model=DataMix,
        source="+".join(sources),
        fields={"weights": inp.weights, "n": inp.n, "seed": inp.seed},
        inputs=list(inp.datasets),
    )


# -- experiments -------------------------------------------------------------------------
class SubmitInput(_In):
    parent: Name = Field(default="base", description="`base` or the id of an experiment to continue from.")
    dataset: str = Field(pattern=_HEX64, description="Digest of a registered dataset.")
    method: Literal["sft", "lora", "dpo", "grpo"] = Field(
        default="sft",
        description="Training method: sft (full fine-tuning), lora (merged after), dpo (pairs built "
        "with the task's checker), grpo (rewards from the task's checker); only the "
        "contract's allowed methods are accepted.",
    )
    config: JsonObject = Field(
        default_factory=dict,
        description="Training parameters (learning_rate, "
        "batch_size, max_steps, epochs, lora_r, ...); omitted ones take their defaults.",
    )


@tool("experiment.submit", roles=("worker",), kind="launching", input=SubmitInput, result=ExperimentResult)
def experiment_submit(ctx: ToolContext, caller: Caller, inp: SubmitInput) -> ExperimentResult:
    """Train from an allowed parent on a registered dataset, then evaluate on `dev`."""
    return run_experiment(ctx, caller, parent=inp.parent, dataset=inp.dataset, method=inp.method, config=inp.config)


class CheckpointRegisterInput(_In):
    path: PathText = Field(description="A checkpoint directory to bring into the run.")


class Nothing(BaseModel):
    pass


@tool(
    "checkpoint.register",
    roles=("worker", "reviewer", "main"),
    kind="launching",
    input=CheckpointRegisterInput,
    result=Nothing,
)
def checkpoint_register(ctx: ToolContext, caller: Caller, inp: CheckpointRegisterInput) -> BaseModel:
    """Always refused: checkpoints exist only as outputs of recorded training from the base."""
    from pathlib import Path

    ctx.guard(
        "foreign weights cannot enter a run; train from `base` or an experiment in your lineage",
        Subcategory.WEIGHT_PROVENANCE,
    )
    # Unguarded (the bench's ablation): the directory is taken as the caller's experiment.
    source = Path(inp.path)
    if not (source / "config.json").is_file():
        raise ToolFailed(f"{inp.path} is not a checkpoint directory")
    return adopt_checkpoint(ctx, caller, source, origin=inp.path, note=inp.path)
