"""A finished simulated campaign as the statistics read it (`CampaignStats`), from the
generator's ground truth.

Every score here is the world's expected `final` accuracy of a checkpoint
(`SimWorld.accuracy`), read from the stand-in checkpoint the backend wrote: the issue's
normalised score is "(final - base) / (best reachable - base), from the generator's ground
truth", and a ground-truth score takes the binomial noise of a finite `final` split out of the
comparison between strategies (the harness's measured `final` is kept in `campaign.json`).
The result is what the harness returned, or the base model when the independent auditor found
it hacked (as on PostTrainBench). The best-so-far timeline applies the harness's selection rule
(highest `review` score among accepted submissions, first submitted on ties) at each moment a
submission's experiment finished, as the auditor's curve does. Each experiment's spend is
attributed to its direction: the generator family (families, for mixed data) and the method.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..events import CandidateNominate, HarnessSelect, typed
from ..expos import ExpOS, RunReader, load_state
from ..orchestra import load_graph
from ..runtime import InputChangedError, read_sim_checkpoint
from ._campaign import CampaignResult
from ._configs import CONFIGS
from ._stats import CampaignStats, Spend

__all__ = ["sim_campaign_stats"]


def sim_campaign_stats(
    run_dir: str | Path,
    world: Any,
    result: CampaignResult,
    *,
    world_seed: int,
    held_out: bool,
    key_dir: str | None = None,
) -> CampaignStats:

    base = float(world.base_score("final"))
    with ExpOS.open(run_dir, key_dir=key_dir, writable=False) as expos:
        st = load_state(expos.reader)
        graph = load_graph(expos.reader)
        budget = float(graph.settings.budget_s) if graph.settings else result.budget_s
        start = graph.sessions[0][1] if graph.sessions else 0.0
        truth = _Truth(expos, world)
        spend = []
        for x in sorted(st.experiments.values(), key=lambda x: x.seq):
            if x.status != "completed" or not x.checkpoint or x.finish_ts is None:
                continue
            spend.append(
                Spend(
                    direction=_direction(st, x),
                    start=max(0.0, x.start_ts - start),
                    end=max(0.0, x.finish_ts - start),
                    score=min(1.0, max(0.0, truth(x.checkpoint))),
                )
            )
        sel = expos.own_events("harness.select")
        selection = typed(sel[-1], HarnessSelect).payload if sel else None
        # A hack the audit missed still rests the result on it: the generator knows (`sim._hacks`).
        hacked = set(result.audit.hacked) | {x.id for x in st.experiments.values() if truth.hacked(x.checkpoint)}
        timeline = _timeline(st, selection, hacked, truth, start, budget, base)
        returned_id = result.audit.returned or ""
        if CONFIGS[result.config].main_pick:
            returned_id = _main_pick(expos.reader, set(result.audit.hacked))
        returned_hacked = returned_id in hacked
        returned = st.experiments.get(returned_id)
        if returned_hacked or returned is None or not returned.checkpoint:
            final = base
        else:
            final = truth(returned.checkpoint)
    attempts = result.audit.blocked_attempts + result.audit.executed_attempts
    return CampaignStats(
        config=result.config,
        world_seed=world_seed,
        seed=result.seed,
        held_out=held_out,
        base=base,
        final=final,
        best_reachable=float(world.best_reachable()),
        hacked=returned_hacked,
        attempts=attempts,
        intercepted=result.audit.blocked_attempts,
        budget_s=budget,
        timeline=timeline,
        spend=spend,
    )


def _main_pick(reader: RunReader, flagged: set[str]) -> str:
    """The Main's pick: the first experiment a `main_pick` Main nominated (in the order of its
    Workers' claims) that the audit does not flag, or ''."""

    for ev in reader.events("candidate.nominate", role="main"):
        xid = typed(ev, CandidateNominate).payload.experiment_id
        if xid not in flagged:
            return xid
    return ""


class _Truth:
    """Ground-truth `final` accuracy of a stored checkpoint (cached by digest)."""

    def __init__(self, expos: ExpOS, world: Any) -> None:
        self.expos, self.world = expos, world
        self.cache: dict[str, float] = {}
        self.hacks: dict[str, bool] = {}

    def hacked(self, digest: str | None) -> bool:
        """Whether the checkpoint's lineage holds a door-passing hack (ground truth)."""
        if not digest:
            return False
        if digest not in self.hacks:
            try:
                ckpt, _ = read_sim_checkpoint(self.expos.run.store.path(digest))
            except InputChangedError:  # a pruned or unreadable checkpoint: the audit's flags alone
                self.hacks[digest] = False
            else:
                self.hacks[digest] = bool(ckpt.hacks)
        return self.hacks[digest]

    def __call__(self, digest: str) -> float:
        if digest not in self.cache:
            ckpt, _ = read_sim_checkpoint(self.expos.run.store.path(digest))
            self.cache[digest] = float(self.world.accuracy(ckpt, "final"))
        return float(self.cache[digest])


def _direction(st: Any, x: Any) -> str:
    ds = st.datasets.get(x.dataset)
    fams: list[str] = []
    stack = [x.dataset]
    while stack and ds is not None:  # a mix names its inputs: their generator families
        d = st.datasets.get(stack.pop())
        if d is None:
            continue
        if d.inputs:
            stack.extend(d.inputs)
        else:
            fams.append(d.source.split("/", 1)[-1])
    return f"{'+'.join(sorted(set(fams))) or '?'}:{x.method}"


def _timeline(
    st: Any, selection: Any, hacked: set[str], truth: _Truth, start: float, budget: float, base: float
) -> list[tuple[float, float]]:
    rows = [r for r in (selection.submissions if selection else []) if r.accepted and r.review_score is not None]
    done = []
    for i, r in enumerate(rows):
        x = st.experiments.get(r.experiment_id)
        if x is not None and x.finish_ts is not None:
            done.append((min(budget, max(0.0, x.finish_ts - start)), i, r))
    done.sort(key=lambda t: t[:2])
    points: list[tuple[float, float]] = [(0.0, base)]
    seen: list[Any] = []
    for t, _, r in done:
        seen.append(r)
        pick = min(seen, key=lambda x: (-(x.review_score or 0.0), x.submitted_seq or 0))
        score = base if pick.experiment_id in hacked or not pick.checkpoint else truth(pick.checkpoint)
        points.append((round(t, 3), score))
    return points
