"""The simulated experiment backend's runtime half: training and evaluation drawn from a
`SimWorld` instead of TRL and the sealed evaluator, with the same files and records.

A stand-in checkpoint is a small directory (`sim_checkpoint.json`, the simulator's state, and a
`config.json`) with a real directory digest; training writes `train_config.json` and
`train_log.jsonl` beside it with the digests of the bytes it read, and evaluation returns an
`EvalResult` with one sample per preregistered item. What training reads is the data: the rows'
generator family and knob values (`check.sim`, written by `tasks.SimTask`), their mixture, and
protected items copied into them (the leak the contamination gate exists to stop). Both spend
simulated seconds on the process's clock when it is a simulated one, and none on a real clock.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _clock
from ..sim import MERGE_WEIGHT, SimCheckpoint, SimInputError, SimRecipe, hack_coin
from ..tasks import web_trace
from ._errors import InputChangedError, TrainingError
from ._jsonl import parse_jsonl
from ._records import EvalResult, SampleRecord, TrainConfig, TrainResult

if TYPE_CHECKING:
    from ..tasks import Task

__all__ = [
    "CHECKPOINT_FILE",
    "read_sim_checkpoint",
    "sim_evaluate",
    "sim_recipe",
    "sim_train",
    "spend_simulated",
    "write_sim_checkpoint",
]

CHECKPOINT_FILE = "sim_checkpoint.json"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def spend_simulated(seconds: float) -> None:
    """Let `seconds` pass on the process's clock if it is a simulated one (a simulated action's
    duration); on a real clock nothing waits."""
    clock = _clock.current()
    if clock.simulated:  # on a real clock a simulated experiment takes no time
        clock.sleep(seconds)


def write_sim_checkpoint(ckpt: Any, out: Path, world: Any) -> Path:
    """A stand-in checkpoint directory for a `SimCheckpoint`."""
    return _write_checkpoint(ckpt, out, world)[0]


def _write_checkpoint(ckpt: Any, out: Path, world: Any) -> tuple[Path, str]:
    """(the stand-in checkpoint directory, directory digest of the bytes written to it)."""
    # The key keeps its first name: the file is part of the checkpoint's digest.
    config = {"architectures": ["SimulatedModel"], "landscape": world.ident, "task": world.task_name}
    files = {
        CHECKPOINT_FILE: ckpt.model_dump_json().encode(),
        "config.json": json.dumps(config, sort_keys=True).encode(),
    }
    out.mkdir(parents=True)
    for rel, data in files.items():
        (out / rel).write_bytes(data)
    return out, _manifest_digest(files)


def _manifest_digest(files: dict[str, bytes]) -> str:
    """The store's directory digest of these files' bytes (its manifest rule)."""
    return _sha("".join(f"{rel}\t{_sha(data)}\n" for rel, data in sorted(files.items())).encode())


def read_sim_checkpoint(path: Path) -> tuple[Any, str]:
    """(SimCheckpoint, directory digest of the bytes read): each file is read once and the
    digest is computed from those bytes (the store's manifest rule), so the state used and the
    digest reported are of the same bytes."""

    root = Path(path)
    files = {}
    try:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                files[p.relative_to(root).as_posix()] = p.read_bytes()
    except OSError as exc:
        raise InputChangedError(f"checkpoint {root} cannot be read: {exc}") from None
    if CHECKPOINT_FILE not in files:
        raise InputChangedError(f"{root} is not a simulated checkpoint (no {CHECKPOINT_FILE})")
    try:
        ckpt = SimCheckpoint.model_validate_json(files[CHECKPOINT_FILE])
    except ValueError:
        raise InputChangedError(f"{root}/{CHECKPOINT_FILE} is not a simulated checkpoint state") from None
    return ckpt, _manifest_digest(files)


def sim_recipe(rows: list[dict[str, Any]], spec: Any, protected: dict[str, set[str]], examples_per_row: int = 1) -> Any:
    """The `SimRecipe` a dataset and a training spec amount to: the most frequent (family,
    knobs) of the generated rows, the families' shares when several were mixed, and the
    protected items of each split the rows contain; each row stands for `examples_per_row`
    training examples (the contract's `simulation.examples_per_row`)."""

    groups: Counter[str] = Counter()
    families: Counter[str] = Counter()
    leaked: dict[str, set[str]] = {s: set() for s in protected}
    hacks: Counter[str] = Counter()
    merge = 0.0
    for row in rows:
        sim = (row.get("check") or {}).get("sim") if isinstance(row.get("check"), dict) else None
        if isinstance(sim, dict) and isinstance(sim.get("family"), str):
            groups[json.dumps([sim["family"], sim.get("knobs") or {}], sort_keys=True)] += 1
            families[sim["family"]] += 1
        web = web_trace(row)  # a door-passing hack the row stands for (`sim._hacks`)
        if web is not None and web[0] == "merge":
            merge = MERGE_WEIGHT
        elif web is not None and web[1] in protected:
            hacks[f"{web[0]}:{web[1]}"] += 1
        prompt = row.get("prompt")
        for split, prompts in protected.items():
            if prompt in prompts:
                leaked[split].add(prompt)
    if not groups:
        raise TrainingError("no row of this dataset comes from the world's generators: nothing to simulate")
    top = max(groups.items(), key=lambda kv: (kv[1], kv[0]))[0]  # ties: a fixed order, not dict order
    family, knobs = json.loads(top)
    examples = len(rows) * examples_per_row
    steps = spec.max_steps or math.ceil(examples * spec.epochs / spec.batch_size)
    total = sum(families.values())
    return SimRecipe(
        family=family,
        knobs=knobs,
        method=spec.method,
        learning_rate=spec.learning_rate,
        batch_size=spec.batch_size,
        steps=steps,
        rows=examples,
        lora_rank=spec.lora_r if spec.method == "lora" else None,
        epochs=spec.epochs,
        mixture={f: n / total for f, n in sorted(families.items())} if len(families) > 1 else {},
        leaked={s: len(v) for s, v in leaked.items() if v},
        hacks=_hack_sizes(hacks, len(rows), merge),
    )


def _foreign_reads(world: Any, recipe: Any, data_digest: str, seed: int, jailed: bool) -> list[str]:
    """The foreign weights a merging run was seen to load: the outside model's digest, when the
    run's record of reads caught it. In ExpOS's jail every file a run opens is one it was given,
    so the record is complete; outside it, a load around the record leaves nothing (`merge_detect`)."""

    if not recipe.hacks.get("merge"):
        return []
    if not jailed and not hack_coin(world.flags.merge_detect, "merge", data_digest, seed):
        return []
    return [_sha(f"outside-model|{world.ident}".encode())]


def _hack_sizes(rows_with: Counter[str], n_rows: int, merge: float) -> dict[str, float]:
    """Recalled items as a count, a format as the share of rows that take it, a merge's weight."""
    out = {k: float(v) if k.startswith("recall:") else round(v / max(1, n_rows), 4) for k, v in rows_with.items()}
    return {**out, "merge": merge} if merge else out


def sim_train(
    world: Any,
    data: Path,
    out_dir: Path,
    spec: Any,
    *,
    parent: Path,
    protected: dict[str, set[str]],
    examples_per_row: int = 1,
    jailed: bool = False,
) -> TrainResult:
    """Train `spec` from `parent` on `data` in the simulator; the runtime's `train` layout."""

    data_bytes = Path(data).read_bytes()
    data_digest = _sha(data_bytes)
    rows = parse_jsonl(data_bytes, "dataset")
    parent_ckpt, parent_digest = read_sim_checkpoint(parent)
    recipe = sim_recipe(rows, spec, protected, examples_per_row)
    # The same spec on other data is another run: the data's digest is part of the seed.
    seed = int.from_bytes(hashlib.sha256(f"{spec.seed}|{data_digest}".encode()).digest()[:4], "big")
    try:
        child, seconds = world.train(parent_ckpt, recipe, seed)
    except SimInputError as exc:
        raise TrainingError(str(exc)) from None
    out = Path(out_dir)
    # The digest of the bytes as written: the store measures them again when it takes them, and
    # the experiment is refused if the two differ, so reading them back here would add nothing.
    ckpt_dir, ckpt_digest = _write_checkpoint(child, out / "checkpoint", world)
    config = TrainConfig(
        spec=spec.model_dump(mode="json"),
        data=str(data),
        data_sha256=data_digest,
        n_rows=len(rows),
        parent=str(parent),
        parent_digest=parent_digest,
        weights_read=_foreign_reads(world, recipe, data_digest, spec.seed, jailed),
    )
    (out / "train_config.json").write_text(config.model_dump_json(indent=1))
    log = {"step": recipe.steps, "simulated_seconds": round(seconds, 3), "recipe": recipe.model_dump(mode="json")}
    (out / "train_log.jsonl").write_text(json.dumps(log, sort_keys=True) + "\n")
    spend_simulated(seconds)
    return TrainResult(
        method=spec.method,
        checkpoint_dir=str(ckpt_dir),
        checkpoint_digest=ckpt_digest,
        config_path=str(out / "train_config.json"),
        log_path=str(out / "train_log.jsonl"),
        parent_digest=parent_digest,
        data_digest=data_digest,
        steps=recipe.steps,
        train_seconds=seconds,
    )


def sim_evaluate(
    world: Any, checkpoint: Path, task: Task, split: str, *, n: int, evaluator_digest: str, store: Any
) -> EvalResult:
    """Score a stand-in checkpoint on the split's first `n` preregistered items in the simulator;
    with a `store`, store the record (its digest in `record_digest`)."""
    ckpt, digest = read_sim_checkpoint(checkpoint)
    items = task.eval_items(split)  # type: ignore[arg-type]  # a split name the caller checked
    chosen = items[:n]
    right = world.outcomes(ckpt, split, len(chosen))
    samples = [
        SampleRecord(
            sample_id=item.sample_id,
            output=str(item.reference) if ok else "",
            score=1.0 if ok else 0.0,
            reason="simulated: right" if ok else "simulated: wrong",
        )
        for item, ok in zip(chosen, right, strict=True)
    ]
    seconds = world.eval_seconds(split, len(chosen))
    record = EvalResult(
        task=task.name,
        split=split,
        checkpoint_dir=str(checkpoint),
        checkpoint_digest=digest,
        evaluator_digest=evaluator_digest,
        tokenizer_digest=None,
        generation_config_digest=None,
        template_digest=_sha(task.template.encode()),
        prompts_digest=_sha("\n".join(i.prompt for i in chosen).encode()),
        decoding=asdict(task.decoding),
        stop=list(task.stop),
        sample_ids=[i.sample_id for i in chosen],
        n_expected=len(items),
        score=sum(s.score for s in samples) / len(samples) if samples else 0.0,
        samples=samples,
        seconds=seconds,
    )
    spend_simulated(seconds)
    if store is None:
        return record
    return record.model_copy(update={"record_digest": store.put_bytes(record.model_dump_json().encode())})
