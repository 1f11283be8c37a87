"""Layer 8: the bench. Campaign configurations (the full system, its ablations, peer
baselines), Workers with a documented tendency to cut corners, the unguarded workspace
that stands for "without ExpOS", the independent auditor, and the ablation table.

Importing this package is light (no torch, no matplotlib); campaigns import the runtime
when they train and evaluate, the plot imports matplotlib when it draws.
"""

from ._auditor import CampaignAudit, audit_campaign
from ._bench import FULL, QUICK, check_settings, run_bench
from ._campaign import CampaignResult, campaign_id, run_campaign
from ._configs import CONFIGS, Config, config_names
from ._report import GRID, aggregate, markdown, plot
from ._shortcuts import CATALOGUE, Shortcut, ShortcutTendency

__all__ = [
    "CATALOGUE",
    "CONFIGS",
    "FULL",
    "GRID",
    "QUICK",
    "CampaignAudit",
    "CampaignResult",
    "Config",
    "Shortcut",
    "ShortcutTendency",
    "aggregate",
    "audit_campaign",
    "campaign_id",
    "check_settings",
    "config_names",
    "markdown",
    "plot",
    "run_bench",
    "run_campaign",
]
