"""Freezing a run: a new run directory, its seal secret, the base model and sealed evaluator
stored, and the task contract recorded as the run's first event (`ExpOS.create`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _clock
from ..errors import RsiMasterError
from ..events import BaseModelSource
from ..ledger import KeyDir
from ..rundir import RunDir
from ..tasks import SPLITS, FileTask, SealKey, SimTask, get_task, load_task_dir, resolve_task, task_spec
from ._backend import freeze_simulation, world_task
from ._contract import CONTRACT_KIND, CONTRACT_VERSION, Budget, EvaluatorSpec, TaskContract, TaskSource
from ._guards import GuardPolicy
from ._registry import ROLES, TOOLS
from ._secrets import key_dir_of

if TYPE_CHECKING:
    from ..runtime import ModelSource
    from ..tasks import Task

__all__ = ["check_run_inputs", "freeze_run"]


def check_run_inputs(
    *,
    eval_limit: int | None = None,
    final_limit: int | None = None,
    simulated: bool = False,
    model: object = None,
    eval_backend: object = None,
) -> None:
    """The rules of a run's inputs that freezing a contract enforces, one line each; the
    orchestra's `resolve_spec` and the bench check the same rules with this, so each rule has one
    message wherever it is refused."""
    if simulated and (model is not None or eval_backend is not None):
        raise RsiMasterError("a simulated run's model and evaluator are its world's: no --model or --eval-backend")
    if eval_limit is not None and eval_limit < 1:
        raise RsiMasterError(f"eval_limit must be positive, got {eval_limit}")
    if final_limit is not None and final_limit < 0:
        raise RsiMasterError(f"final_limit must be 0 (the whole split) or positive, got {final_limit}")


HARNESS = {"role": "harness", "id": "expos"}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _task_source(task: object) -> TaskSource | None:

    if not isinstance(task, FileTask):
        return None
    return TaskSource(
        files=dict(task.file_digests),
        digest=task.digest,
        format=task.format,
        scorer=task.scorer.kind,
        train_items=len(task.train_pool()),
        train_dropped=task.train_dropped,
    )


def freeze_run(
    run_dir: Path | str,
    task: str | Path | Task | None,
    *,
    budget: Budget | None,
    eval_limit: int | None,
    final_limit: int | None,
    key_dir: KeyDir | Path | str | None,
    allowed_methods: list[str] | None,
    allowed_generators: list[str] | None,
    allowed_teachers: list[str] | None,
    run_id: str | None,
    guards: GuardPolicy,
    eval_backend: Any = None,
    model: ModelSource | str | Path | None = None,
    world: Any = None,
) -> tuple[RunDir, TaskContract]:
    """Create the run directory and record its contract (the arguments as `ExpOS.create` takes
    them); the run is open on return and closed again if anything fails. The tools must be
    registered first: the contract lists each role's permitted tools. `model` is the base
    model (`resolve_model`'s ModelSource, or what `--model` takes; None: the shipped one):
    its defining files are copied into the run's store, measured, and the contract pins
    their digest. `eval_backend` is sealed with the evaluator (default `transformers`).
    With a `world` (a `sim.SimWorld`) the run is simulated: its task is the
    world's, its base model a stand-in checkpoint and its sealed evaluator the world
    (`_backend.freeze_simulation`); it takes no `model` and no `eval_backend`."""
    from ..runtime import (
        METHODS,
        ModelSource,
        check_backend,
        check_chat_template,
        check_device,
        create_seal_secret,
        is_chat,
        make_backend,
        resolve_model,
        seal_commitment,
        seal_evaluator,
    )

    source: ModelSource | None = None
    given: Task
    check_run_inputs(
        eval_limit=eval_limit,
        final_limit=final_limit,
        simulated=world is not None,
        model=model,
        eval_backend=eval_backend,
    )
    if world is not None:
        if task is not None and not isinstance(task, (str, SimTask)):
            raise RsiMasterError("a simulated run's task is its world's, not a task directory")
        given = world_task(world)
        name = task.name if isinstance(task, SimTask) else task
        if name is not None and name != given.name:
            raise RsiMasterError(f"a simulated run's task is its world's ({given.name}), not {task!r}")
    else:
        # A built-in name or a task directory (path or FileTask): an unknown task or a bad
        # directory fails before anything is written.
        if task is None:
            raise RsiMasterError("name a task")
        given = resolve_task(task)
    file_task = given if isinstance(given, FileTask) else None
    if world is None:
        source = model if isinstance(model, ModelSource) else resolve_model(model)  # so does a bad model
        if is_chat(given):  # a chat task on a model without a chat template: refused here, not in training
            check_chat_template(
                source.path, "the shipped model" if source.is_shipped else f"model {source.spec}", given.name
            )
    backend = make_backend(eval_backend)
    check_backend(backend)  # a backend this machine cannot run fails before anything is written
    if world is None:
        check_device()  # so does a device it does not have
    run = RunDir.create(run_dir, key_dir=key_dir, run_id=run_id)
    try:
        secret = create_seal_secret(run.key_dir, run.run_id)
        if file_task is not None:
            # The directory's files go into the seal as the bytes that were read and digested;
            # from here on the run's task is the sealed copy, never the directory (an agent may
            # be able to edit it).
            seal_path, evaluator_digest = seal_evaluator(store=run.store, task_files=file_task.files, backend=backend)
            task_obj: Task = load_task_dir(Path(seal_path) / "task", expected_digest=file_task.digest)
            keys = key_dir_of(run.key_dir, "freezing a run")
            record = keys.record(run.run_id)
            if record is not None:
                keys.save_record(record.model_copy(update={"task_dir": str(Path(file_task.root).resolve())}))
        elif world is not None:
            task_obj = world_task(world, SealKey(secret=secret))
        else:
            task_obj = get_task(given.name, seal_key=SealKey(secret=secret))
            seal_path, evaluator_digest = seal_evaluator(store=run.store, backend=backend)
        spec = task_spec(task_obj)
        simulation = None
        base_source: BaseModelSource | None = None
        if world is None:
            assert source is not None  # resolved above for a real run
            base_artifact, base_source = _store_base(run, source)
            base_dir: Path | None = run.store.path(base_artifact)
        else:
            base_dir = None
            base_artifact, seal_name, evaluator_digest, simulation = freeze_simulation(run, world, _clock.now())
            seal_path = run.store.path(seal_name)
            budget = (budget or Budget()).model_copy(
                update={"max_rows": max(1, (budget or Budget()).max_rows // simulation.examples_per_row)}
            )
        families = [f"{spec['name']}/{name}" for name in sorted(task_obj.generators())]
        limits: dict[str, int | None] = dict.fromkeys(SPLITS, eval_limit)
        if final_limit is not None:
            limits["final"] = final_limit or None
        ids: dict[str, list[str]] = {s: spec["sample_ids"][s][: limits[s] or None] for s in SPLITS}
        tok = base_dir / "tokenizer.json" if base_dir is not None else None
        gen = base_dir / "generation_config.json" if base_dir is not None else None
        contract = TaskContract(
            version=CONTRACT_VERSION,
            seal_commitment=seal_commitment(secret),
            task=spec["name"],
            capability=spec["capability"],
            base_model_digest=base_artifact,
            base_model_artifact=base_artifact,
            base_tokenizer_sha256=hashlib.sha256(tok.read_bytes()).hexdigest() if tok and tok.is_file() else None,
            base_generation_config_sha256=hashlib.sha256(gen.read_bytes()).hexdigest()
            if gen and gen.is_file()
            else None,
            base_model_source=base_source,
            evaluator=EvaluatorSpec(
                evaluator_digest=evaluator_digest,
                evaluator_artifact=Path(seal_path).name,
                template_sha256=spec["template_sha256"],
                decoding=spec["decoding"],
                stop=spec["stop"],
                stop_sha256=_sha(json.dumps(spec["stop"])),
                sample_ids=ids,
                items_sha256=spec["items_sha256"],
                backend=backend.record() if simulation is None else {"name": "sim"},
            ),
            allowed_generators=allowed_generators if allowed_generators is not None else families,
            # A task may name sources of its own (a simulated world's agents bring data from the web).
            allowed_teachers=list(allowed_teachers or []) + list(getattr(task_obj, "teachers", ())),
            allowed_methods=allowed_methods if allowed_methods is not None else sorted(METHODS),
            budget=budget or Budget(),
            permitted_tools={role: sorted(t.name for t in TOOLS.values() if role in t.roles) for role in ROLES},
            guards=guards.name,
            task_source=_task_source(task_obj),
            simulation=simulation,
        )
        # Absent rather than null where unused: a default run's contract is as it was.
        exclude = {k for k in ("base_model_source", "task_source", "simulation") if getattr(contract, k) is None}
        run.record(
            {
                "kind": CONTRACT_KIND,
                "actor": HARNESS,
                "payload": contract.model_dump(mode="json", exclude=exclude),
                "artifacts": [
                    {"digest": base_artifact, "role": "output", "name": "base_model"},
                    {"digest": contract.evaluator.evaluator_artifact, "role": "output", "name": "sealed_evaluator"},
                ],
            }
        )
    except BaseException:
        run.close()
        raise
    return run, contract


def _store_base(run: RunDir, source: ModelSource) -> tuple[str, BaseModelSource | None]:
    """Store the base model's defining files (the copy every experiment from `base` trains
    from) and return its store digest and, for a user model, the contract's record of it."""
    import tempfile

    from ..runtime import stage_model

    if source.is_shipped:
        return run.store.put_dir(source.path), None
    # Staged beside the store (same filesystem): the store then takes the files by renaming,
    # not by a second copy of what may be many gigabytes.
    with tempfile.TemporaryDirectory(prefix=".base-", dir=run.path) as tmp:
        staged = Path(tmp) / "model"
        stage_model(source, staged)  # refuses a model changed since it was resolved
        digest = run.store.put_dir(staged, move=True)
    if digest != source.tree_digest:
        raise RsiMasterError(f"stored base model {digest} differs from the resolved {source.tree_digest}")
    return digest, BaseModelSource(
        spec=source.spec,
        path=str(source.path),
        repo_id=source.repo_id,
        revision=source.revision,
        architecture=source.architecture,
        tree_digest=source.tree_digest,
        files=dict(source.files),
    )
