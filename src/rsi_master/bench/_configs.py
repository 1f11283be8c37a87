"""The bench's configurations: the full system, its ablations and the peer baselines.

Every configuration runs the same Worker code (`ShortcutWorker`, or its search variants
for the two search baselines) under the same wall-clock budget on the same slot pool;
what changes is the Main agent, whether Reviewers exist, how many slots run at once, and
the guard policy of the door the agents act through (ExpOS's Strict, or the unguarded workspace).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CONFIGS", "Config", "config_names"]

_M = "rsi_master.bench._mains:"
_W = "rsi_master.bench._workers:"
_P = "rsi_master.bench._peers:"
WORKSPACE = "rsi_master.bench._workspace:Workspace"


@dataclass(frozen=True)
class Config:
    name: str
    description: str
    main: str
    worker: str = _W + "ShortcutWorker"
    environment: str | None = None  # None: ExpOS (Strict); else an unguarded guard policy class
    one_slot: bool = False  # runs on one slot whatever the pool (serial Workers)


CONFIGS: dict[str, Config] = {
    c.name: c
    for c in (
        Config("rsi-master", "full system: policy Main, evidence Reviewers, parallel Workers, ExpOS", "policy"),
        Config(
            "no-expos",
            "same Main, Workers and Reviewers acting in an unguarded workspace",
            "policy",
            environment=WORKSPACE,
        ),
        Config(
            "no-reviewer",
            "no Reviewer: the Main decides from Worker summaries (claimed dev scores)",
            _M + "NoReviewMain",
        ),
        Config("serial", "full system on one slot (serial Workers)", "policy", one_slot=True),
        Config(
            "single-agent",
            "one Worker refining its first direction for the whole budget, no Main "
            "decisions, no Reviewer, through ExpOS",
            _M + "SingleMain",
        ),
        Config(
            "single-agent-no-expos",
            "the single agent in the unguarded workspace",
            _M + "SingleMain",
            environment=WORKSPACE,
        ),
        Config(
            "optuna-tpe",
            "Optuna TPE over the union of every recipe knob, one Worker per slot sharing one study, through ExpOS",
            _M + "SearchMain",
            worker=_W + "TPESearchWorker",
        ),
        Config(
            "random-search",
            "random search over the same union space, one Worker per slot, through ExpOS",
            _M + "SearchMain",
            worker=_W + "RandomSearchWorker",
        ),
        Config(
            "asha",
            "asynchronous successive halving (Optuna RandomSampler + SuccessiveHalvingPruner) over the "
            "union space, steps as the resource, rungs continued from their checkpoints, one Worker per "
            "slot sharing one study, through ExpOS",
            _M + "SearchMain",
            worker=_P + "ASHAWorker",
        ),
        Config(
            "hyperband",
            "Hyperband (Optuna TPESampler + HyperbandPruner) over the same union space and resource, "
            "one Worker per slot sharing one study, through ExpOS",
            _M + "SearchMain",
            worker=_P + "HyperbandWorker",
        ),
        Config(
            "pbt",
            "population-based training: a population of recipes trained in intervals, truncation "
            "selection copies a top member's checkpoint and perturbs its recipe, through ExpOS",
            "rsi_master.bench._pbt:PBTMain",
        ),
    )
}


def config_names() -> list[str]:
    return list(CONFIGS)
