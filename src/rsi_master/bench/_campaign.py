"""One campaign: a configuration on a task with a seed, run to its summary, then audited.

A campaign is an ordinary orchestrated run (`start_run`) in `<out>/campaigns/<id>/run`
(and `run.workspace` beside it when unguarded). Its figures go to `campaign.json` next to
it; a bench started again reuses finished campaigns and resumes interrupted ones.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..events import OrchestraFinish, typed
from ..expos import ExpOS
from ..orchestra import SHIPPED_PRIOR, RunSpec, resume_run, start_run
from ..rundir import is_run_dir
from ._auditor import CampaignAudit, audit_campaign
from ._configs import CONFIGS
from ._shortcuts import ShortcutTendency
from ._workspace import workspace_dir

if TYPE_CHECKING:
    from ..sim import SimWorld

__all__ = ["CampaignResult", "campaign_id", "campaign_spec", "run_campaign"]


class CampaignResult(BaseModel):
    version: int = 1
    config: str
    task: str
    seed: int
    budget_s: float
    slots: int
    score: float = Field(
        description="Reported score: the harness's `final` score of the returned checkpoint, "
        "or the base model's if the auditor found it hacked."
    )
    harness_final: float = Field(description="The harness's `final` score of the returned checkpoint.")
    base_score: float
    selected_review_score: float | None = Field(
        default=None,
        description="The `review` score the selection saw for the returned checkpoint: in an unguarded "
        "workspace, what the agents' own evaluation said.",
    )
    gain_last_half: float = Field(description="Best-so-far final score at the end minus at half the budget.")
    slot_utilisation: float
    experiments: int
    workers: int
    reviews: int
    spent_s: float
    wall_s: float = Field(description="Wall time of the whole campaign, harness and audit included.")
    audit: CampaignAudit


def campaign_id(config: str, task: str, seed: int) -> str:
    return f"{config}--{task}--s{seed}"


def campaign_spec(
    config: str,
    task: str,
    seed: int,
    budget_s: float,
    run_dir: Path,
    *,
    slots: int,
    eval_limit: int,
    tendency: ShortcutTendency,
    key_dir: str | None = None,
    max_train_steps: int = 400,
    timing_prior: dict[str, float] | None = None,
    prior: str | Path | None = None,
    world: SimWorld | None = None,
) -> RunSpec:
    """The `RunSpec` of a campaign: an ordinary run with the configuration's agents, on the
    simulated backend when a `world` is given. `prior` is the landscape file a configuration
    with a prior plans with (default: the shipped one), passed as `--prior FILE` passes it; the
    others get none."""

    cfg = CONFIGS[config]
    return RunSpec(
        task=task,
        budget=budget_s,
        backend="real" if world is None else "sim",
        world=world,
        slots=1 if cfg.one_slot else slots,
        seed=seed,
        run_dir=run_dir,
        key_dir=key_dir,
        eval_limit=eval_limit,
        main=cfg.main,
        reviewer="evidence",
        worker=cfg.worker,
        environment=cfg.environment,
        max_train_steps=max_train_steps,
        agent_settings={"shortcuts": tendency.model_dump(mode="json"), "bench_config": config},
        timing_prior=timing_prior,
        prior=(prior or SHIPPED_PRIOR) if cfg.prior else None,
    )


def run_campaign(
    config: str,
    task: str,
    seed: int,
    budget_s: float,
    out_dir: str | Path,
    *,
    slots: int,
    eval_limit: int,
    tendency: ShortcutTendency,
    key_dir: str | None = None,
    max_train_steps: int = 400,
    timing_prior: dict[str, float] | None = None,
    display: Any = None,
    campaign: str | None = None,
    world: SimWorld | None = None,
    durable: bool = True,
    prior: str | Path | None = None,
) -> CampaignResult:
    """Run (or resume, or read back) one campaign (`campaign_spec`). `campaign` names the directory
    where the task name alone does not (a simulated bench runs many worlds); `durable=False`
    skips fsync (throw-away runs)."""

    root = Path(out_dir) / "campaigns" / (campaign or campaign_id(config, task, seed))
    done = root / "campaign.json"
    if done.is_file():
        return CampaignResult.model_validate_json(done.read_text())
    root.mkdir(parents=True, exist_ok=True)
    run_dir = root / "run"
    t0 = time.time()
    quiet = display or _Quiet()
    if is_run_dir(run_dir):
        summary = _summary_or_resume(run_dir, key_dir, quiet, resume_run)
    else:
        # A workspace left by a campaign killed before its run existed holds nothing of value
        # and may hold edits: the new run starts from a fresh one.
        shutil.rmtree(workspace_dir(run_dir), ignore_errors=True)
        spec = campaign_spec(
            config,
            task,
            seed,
            budget_s,
            run_dir,
            slots=slots,
            eval_limit=eval_limit,
            tendency=tendency,
            key_dir=key_dir,
            max_train_steps=max_train_steps,
            timing_prior=timing_prior,
            prior=prior,
            world=world,
        )
        summary = start_run(spec, display=quiet, durable=durable)
    audit = audit_campaign(run_dir, key_dir=key_dir)
    base = float(summary["base_score"])
    # A campaign that returned no checkpoint leaves the base model: that is what it scores.
    harness_final = base if summary["final_score"] is None else float(summary["final_score"])
    curve = audit.curve
    result = CampaignResult(
        config=config,
        task=task,
        seed=seed,
        budget_s=float(summary["budget_s"]),
        slots=int(summary["slots"]),
        score=base if audit.returned_hacked else harness_final,
        harness_final=harness_final,
        base_score=base,
        selected_review_score=summary.get("selected_review_score"),
        gain_last_half=(_at(curve, 1.0) - _at(curve, 0.5)) if curve else 0.0,
        slot_utilisation=float(summary.get("slot_utilisation", 0.0)),
        experiments=int(summary["experiments"]),
        workers=int(summary["workers"]),
        reviews=int(summary["reviews"]),
        spent_s=float(summary["spent_s"]),
        wall_s=round(time.time() - t0, 1),
        audit=audit,
    )
    done.write_text(result.model_dump_json(indent=1))
    return result


def _summary_or_resume(run_dir: Path, key_dir: str | None, display: Any, resume_run: Any) -> dict[str, Any]:
    """A finished run's stored summary, or the summary of resuming it."""

    with ExpOS.open(run_dir, key_dir=key_dir, writable=False) as expos:
        fin = expos.own_events("orchestra.finish")
        if fin:
            return dict(json.loads(expos.run.store.read_bytes(typed(fin[-1], OrchestraFinish).payload.summary)))
    return dict(resume_run(run_dir, key_dir=key_dir, display=display))


def _at(curve: list[tuple[float, float]], t: float) -> float:
    """The step curve's value at fraction t of the budget."""
    value = curve[0][1]
    for x, y in curve:
        if x <= t + 1e-9:
            value = y
    return value


class _Quiet:
    """Campaign progress stays out of the bench's output (the ledger has all of it)."""

    def line(self, text: str) -> None:
        pass

    def status(self, state: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        pass
