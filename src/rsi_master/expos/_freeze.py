"""Freezing a run: a new run directory, its seal secret, the base model and sealed evaluator
stored, and the task contract recorded as the run's first event (`ExpOS.create`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..errors import RsiMasterError
from ..ledger import KeyDir
from ..rundir import RunDir
from ._contract import CONTRACT_KIND, CONTRACT_VERSION, Budget, EvaluatorSpec, TaskContract
from ._guards import GuardPolicy
from ._registry import ROLES, TOOLS

__all__ = ["freeze_run"]

HARNESS = {"role": "harness", "id": "expos"}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def freeze_run(
    run_dir: Path | str,
    task: str,
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
    landscape: Any = None,
) -> tuple[RunDir, TaskContract]:
    """Create the run directory and record its contract (the arguments as `ExpOS.create` takes
    them); the run is open on return and closed again if anything fails. The tools must be
    registered first: the contract lists each role's permitted tools. With a `landscape`
    (a `sim.SimLandscape`) the run is simulated: its task is the landscape's, its base model a
    stand-in checkpoint and its sealed evaluator the landscape (`_backend.freeze_simulation`)."""
    from ..runtime import METHODS, base_model_dir, create_seal_secret, seal_commitment, seal_evaluator
    from ..tasks import SPLITS, SealKey, get_task, task_spec

    if landscape is not None:
        from ._backend import register_landscape_task

        register_landscape_task(landscape)
    get_task(task)  # an unknown task fails before anything is written
    if eval_limit is not None and eval_limit < 1:
        raise RsiMasterError("eval_limit must be positive")
    if final_limit is not None and final_limit < 0:
        raise RsiMasterError("final_limit must be 0 (the whole split) or positive")
    run = RunDir.create(run_dir, key_dir=key_dir, run_id=run_id)
    try:
        secret = create_seal_secret(run.key_dir, run.run_id)
        task_obj = get_task(task, seal_key=SealKey(secret=secret))
        spec = task_spec(task_obj)
        simulation = None
        if landscape is None:
            base_dir: Path | None = base_model_dir()
            base_artifact = run.store.put_dir(base_dir)
            seal_path, evaluator_digest = seal_evaluator(store=run.store)
        else:
            from .. import _clock
            from ._backend import freeze_simulation

            base_dir = None
            base_artifact, seal_name, evaluator_digest, simulation = freeze_simulation(run, landscape, _clock.now())
            seal_path = run.store.path(seal_name)
            budget = (budget or Budget()).model_copy(
                update={"max_rows": max(1, (budget or Budget()).max_rows // simulation.examples_per_row)}
            )
        families = [f"{task_obj.name}/{name}" for name in sorted(task_obj.generators())]
        limits: dict[str, int | None] = dict.fromkeys(SPLITS, eval_limit)
        if final_limit is not None:
            limits["final"] = final_limit or None
        ids: dict[str, list[str]] = {s: spec["sample_ids"][s][: limits[s] or None] for s in SPLITS}
        tok = base_dir / "tokenizer.json" if base_dir is not None else None
        gen = base_dir / "generation_config.json" if base_dir is not None else None
        contract = TaskContract(
            version=CONTRACT_VERSION,
            seal_commitment=seal_commitment(secret),
            task=task_obj.name,
            capability=task_obj.capability,
            base_model_digest=base_artifact,
            base_model_artifact=base_artifact,
            base_tokenizer_sha256=hashlib.sha256(tok.read_bytes()).hexdigest() if tok and tok.is_file() else None,
            base_generation_config_sha256=hashlib.sha256(gen.read_bytes()).hexdigest()
            if gen and gen.is_file()
            else None,
            evaluator=EvaluatorSpec(
                evaluator_digest=evaluator_digest,
                evaluator_artifact=Path(seal_path).name,
                template_sha256=spec["template_sha256"],
                decoding=spec["decoding"],
                stop=spec["stop"],
                stop_sha256=_sha(json.dumps(spec["stop"])),
                sample_ids=ids,
                items_sha256=spec["items_sha256"],
            ),
            allowed_generators=allowed_generators if allowed_generators is not None else families,
            allowed_teachers=list(allowed_teachers or []),
            allowed_methods=allowed_methods if allowed_methods is not None else sorted(METHODS),
            budget=budget or Budget(),
            permitted_tools={role: sorted(t.name for t in TOOLS.values() if role in t.roles) for role in ROLES},
            guards=guards.name,
            **({"simulation": simulation} if simulation is not None else {}),
        )
        run.record(
            {
                "kind": CONTRACT_KIND,
                "actor": HARNESS,
                "payload": contract.model_dump(mode="json"),
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
