"""The bench's configurations: the full system, its ablations and the peer baselines.

Every configuration runs the same Worker code (`ShortcutWorker`, or its search variants
for the two search baselines) under the same wall-clock budget on the same slot pool;
what changes is the Main agent, whether Reviewers exist, how many slots run at once, the
guard policy of the door the agents act through (ExpOS's Strict, or the unguarded workspace),
and whether the Main plans with a prior (a landscape measured before the campaign, handed over
as `rsi-master run --prior FILE` hands one over).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import RsiMasterError

__all__ = ["CONFIGS", "REFERENCE", "Config", "check_configs", "check_seeds_and_slots", "config_names"]

WORKSPACE = "workspace"
REFERENCE = "rsi-master"  # both benches pair every other configuration with this one


@dataclass(frozen=True)
class Config:
    name: str
    description: str
    main: str
    worker: str = "shortcut"
    environment: str | None = None  # None: ExpOS (Strict); else an unguarded guard policy class
    one_slot: bool = False  # runs on one slot whatever the pool (serial Workers)
    # The Main plans with a prior: on the real bench the shipped landscape (measured on the
    # built-in suite), on the simulated bench the pilot of the campaign's world
    # (`landscape.sim_pilot`). Without one, the Main decides from the run's own evidence.
    prior: bool = False
    # The returned checkpoint is the Main's own pick on the Workers' claims (the simulated bench
    # scores it), not the harness's re-selection on `review`.
    main_pick: bool = False


CONFIGS: dict[str, Config] = {
    c.name: c
    for c in (
        Config("rsi-master", "full system: policy Main, evidence Reviewers, parallel Workers, ExpOS", "policy"),
        Config(
            "rsi-master-prior",
            "full system whose Main plans with a prior measured before the campaign (real: the shipped "
            "landscape; sim: a pilot's learning curves on the world's dev split)",
            "policy",
            prior=True,
        ),
        Config(
            "no-expos",
            "same Main, Workers and Reviewers acting in an unguarded workspace",
            "policy",
            environment=WORKSPACE,
        ),
        Config(
            "no-reviewer",
            "no Reviewer: the Main decides from Worker summaries (claimed dev scores)",
            "no-review",
        ),
        Config(
            "main-pick",
            "no Reviewer, and the returned checkpoint is the Main's pick on the Workers' claims (the "
            "candidate of the best claimed dev score), not the harness's re-selection on review",
            "main-pick",
            main_pick=True,
        ),
        Config("serial", "full system on one slot (serial Workers)", "policy", one_slot=True),
        Config(
            "single-agent",
            "one Worker refining its first direction for the whole budget, no Main "
            "decisions, no Reviewer, through ExpOS",
            "single",
        ),
        Config(
            "single-agent-no-expos",
            "the single agent in the unguarded workspace",
            "single",
            environment=WORKSPACE,
        ),
        Config(
            "optuna-tpe",
            "Optuna TPE over the union of every recipe knob, one Worker per slot sharing one study, through ExpOS",
            "search",
            worker="tpe-search",
        ),
        Config(
            "random-search",
            "random search over the same union space, one Worker per slot, through ExpOS",
            "search",
            worker="random-search",
        ),
        Config(
            "asha",
            "asynchronous successive halving (Optuna RandomSampler + SuccessiveHalvingPruner) over the "
            "union space, steps as the resource, rungs continued from their checkpoints, one Worker per "
            "slot sharing one study, through ExpOS",
            "search",
            worker="asha",
        ),
        Config(
            "hyperband",
            "Hyperband (Optuna TPESampler + HyperbandPruner) over the same union space and resource, "
            "one Worker per slot sharing one study, through ExpOS",
            "search",
            worker="hyperband",
        ),
        Config(
            "pbt",
            "population-based training: a population of recipes trained in intervals, truncation "
            "selection copies a top member's checkpoint and perturbs its recipe, through ExpOS",
            "pbt",
        ),
    )
}


def config_names() -> list[str]:
    return list(CONFIGS)


def check_configs(configs: list[str]) -> None:
    """Every configuration known, at least one (one clear line otherwise)."""

    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or not configs:
        raise RsiMasterError(
            f"unknown configuration {', '.join(unknown) or '(none given)'}; known: {', '.join(CONFIGS)}"
        )


def check_seeds_and_slots(seeds: list[int], slots: int) -> None:
    """Seeds: non-negative integers, none repeated, at least one; slots: at least one."""

    if not seeds or any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in seeds):
        raise RsiMasterError(f"seeds must be non-negative integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise RsiMasterError(f"seeds repeat: {seeds!r}")
    if slots < 1:
        raise RsiMasterError(f"slots must be at least 1, got {slots}")
