"""Layer 8: the bench. Campaign configurations (the full system, its ablations, peer
baselines), Workers with a documented tendency to cut corners, the unguarded workspace
that stands for "without ExpOS", the independent auditor, and the ablation table.

Importing this package is light (no torch, no matplotlib); campaigns import the runtime
when they train and evaluate, the plot imports matplotlib when it draws.
"""

from . import _mains, _pbt, _peers, _workers  # noqa: F401  (registers the bench's agents by name)
from ._auditor import CampaignAudit, audit_campaign
from ._bench import FULL, QUICK, check_settings, machine_budget, run_bench
from ._campaign import CampaignResult, campaign_id, campaign_spec, run_campaign
from ._configs import CONFIGS, REFERENCE, Config, config_names
from ._report import GRID, aggregate, markdown, plot
from ._shortcuts import CATALOGUE, Shortcut, ShortcutTendency
from ._simbench import SIM, SeedRange, check_sim_settings, run_sim_bench, sim_campaign_id
from ._stats import (
    DEVELOPMENT_SEEDS,
    HELD_OUT_SEEDS,
    CampaignStats,
    ConfigSummary,
    PairedTest,
    Spend,
    bootstrap_ci,
    is_held_out,
    late_gain,
    lock_in,
    normalised,
    paired_scores,
    paired_test,
    plot_summaries,
    plot_timelines,
    summarise,
    summary_lines,
    timeline_curve,
    world_seeds,
)

__all__ = [
    "CATALOGUE",
    "CONFIGS",
    "DEVELOPMENT_SEEDS",
    "FULL",
    "GRID",
    "HELD_OUT_SEEDS",
    "QUICK",
    "REFERENCE",
    "SIM",
    "CampaignAudit",
    "CampaignResult",
    "CampaignStats",
    "Config",
    "ConfigSummary",
    "PairedTest",
    "SeedRange",
    "Shortcut",
    "ShortcutTendency",
    "Spend",
    "aggregate",
    "audit_campaign",
    "bootstrap_ci",
    "campaign_id",
    "campaign_spec",
    "check_settings",
    "check_sim_settings",
    "config_names",
    "is_held_out",
    "late_gain",
    "lock_in",
    "machine_budget",
    "markdown",
    "normalised",
    "paired_scores",
    "paired_test",
    "plot",
    "plot_summaries",
    "plot_timelines",
    "run_bench",
    "run_campaign",
    "run_sim_bench",
    "sim_campaign_id",
    "summarise",
    "summary_lines",
    "timeline_curve",
    "world_seeds",
]
