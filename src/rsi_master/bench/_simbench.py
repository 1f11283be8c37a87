"""`rsi-master bench --backend sim`: every configuration on N generated worlds x K seeds on
the simulated backend, then the statistics of `bench._stats`.

A campaign is the same orchestrated run as on the real bench (`run_campaign`: the
configuration's Main, Workers and Reviewers acting through ExpOS or the unguarded workspace,
the harness, the independent auditor), with the simulated backend and the world of its
generator seed (`rsi_master.sim.generate_world`). Its record (`CampaignStats`, ground truth
from the world: `bench._simrecord`) goes to `stats.json` beside its `campaign.json`; a
bench started again on the same directory reuses finished campaigns and resumes the rest, and
refuses a directory made with other settings.

Generator seeds come from `bench._stats.world_seeds`: the first N of the development range,
and with `--held-out` also the first N of the held-out range. The two are reported separately
(`summarise` groups by range); nothing here reads held-out results to choose a setting.

A configuration with a prior (`rsi-master-prior`) plans with the pilot of its campaign's
world (`landscape.sim_pilot`: learning curves of every family measured on `dev` through the
simulator's public actions, the world's noise included, no ground truth), written to the
campaign's `prior.json` and passed to the run as `rsi-master run --prior FILE` passes a file.

Campaigns run in `jobs` processes (default 2, one per core of the reference machine): the
simulated clock is process-wide, so one process runs one campaign at a time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._proc import tied_process_pool
from ..errors import RsiMasterError
from ..landscape import save, sim_pilot
from ..orchestra import parse_budget
from ..sim import GeneratorFlags, flags_from, generate_world
from ._campaign import run_campaign
from ._configs import CONFIGS, REFERENCE, check_configs, check_seeds_and_slots
from ._shortcuts import ShortcutTendency
from ._simrecord import sim_campaign_stats
from ._stats import (
    DEVELOPMENT_SEEDS,
    HELD_OUT_SEEDS,
    CampaignStats,
    is_held_out,
    normalised,
    plot_summaries,
    plot_timelines,
    summarise,
    summary_lines,
)
from ._stats import world_seeds as first_seeds

__all__ = ["SIM", "SeedRange", "check_sim_settings", "run_sim_bench", "sim_campaign_id"]

SIM: dict[str, Any] = {
    "worlds": 200,
    "seeds": [0],
    "budget_s": 36_000.0,  # 10 simulated hours
    "slots": 4,
    "jobs": 2,
    "preset": "default",
    "eval_limit": 50,  # items per split each run scores, as `rsi-master run` (scores here are ground truth)
    "max_train_steps": 3_000,
}
PRIOR_FILE = "prior.json"  # a campaign's prior (configurations with one), beside its run


@dataclass(frozen=True)
class SeedRange:
    """Generator seeds `start .. start + count - 1`, all in the development or all in the held-out
    range (`--world-seeds START[:COUNT]`): a range nobody tuned on, named by anyone."""

    start: int
    count: int = 1

    @classmethod
    def parse(cls, text: str) -> SeedRange:
        head, sep, tail = str(text).strip().partition(":")
        try:
            start, count = int(head), int(tail) if sep else 1
        except ValueError:
            raise RsiMasterError(f"--world-seeds takes START[:COUNT] (integers), got {text!r}") from None
        return cls(start, count).checked()

    def checked(self) -> SeedRange:
        if self.count < 1:
            raise RsiMasterError(f"--world-seeds: COUNT must be at least 1, got {self.count}")
        last = self.start + self.count - 1
        for r in (DEVELOPMENT_SEEDS, HELD_OUT_SEEDS):
            if self.start in r and last in r:
                return self
        raise RsiMasterError(
            f"--world-seeds {self.start}:{self.count} must lie within the development range "
            f"{DEVELOPMENT_SEEDS.start}..{DEVELOPMENT_SEEDS.stop - 1} or the held-out range "
            f"{HELD_OUT_SEEDS.start}..{HELD_OUT_SEEDS.stop - 1}"
        )

    @property
    def held_out(self) -> bool:
        return is_held_out(self.start)

    def seeds(self) -> list[int]:
        return list(range(self.start, self.start + self.count))

    def __str__(self) -> str:
        return f"{self.start}:{self.count}"


def sim_campaign_id(config: str, world_seed: int, seed: int) -> str:
    # `L` for the world's seed: the directories of benches already run keep their names.
    return f"{config}--L{world_seed}--s{seed}"


def check_sim_settings(
    configs: list[str],
    worlds: int,
    seeds: list[int],
    budget: Any,
    slots: int,
    jobs: int,
    preset: str,
    flags: dict[str, Any] | None,
) -> tuple[float, Any]:
    """One clear line for each bad input, before anything is written: (budget in seconds, flags)."""

    check_configs(configs)
    if len(set(configs)) != len(configs):
        raise RsiMasterError(f"configurations repeat: {', '.join(configs)}")
    most = min(len(DEVELOPMENT_SEEDS), len(HELD_OUT_SEEDS))
    if not isinstance(worlds, int) or isinstance(worlds, bool) or not 1 <= worlds <= most:
        raise RsiMasterError(f"--worlds must be an integer in 1..{most}, got {worlds!r}")
    check_seeds_and_slots(seeds, slots)
    if jobs < 1:
        raise RsiMasterError(f"jobs must be at least 1, got {jobs}")
    budget_s = parse_budget(budget)
    return budget_s, flags_from(preset, **(flags or {}))


def run_sim_bench(
    out_dir: str | Path,
    *,
    configs: list[str] | None = None,
    worlds: int | None = None,
    seeds: list[int] | None = None,
    budget: Any = None,
    slots: int | None = None,
    held_out: bool = False,
    world_seeds: SeedRange | None = None,
    preset: str | None = None,
    flags: dict[str, Any] | None = None,
    tendency: ShortcutTendency | None = None,
    key_dir: str | None = None,
    jobs: int | None = None,
    make_plot: bool = True,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    configs = list(configs or CONFIGS)
    if world_seeds is not None:
        world_seeds = world_seeds.checked()
        if worlds is not None or held_out:
            raise RsiMasterError("--world-seeds names the worlds: give it without --worlds or --held-out")
        worlds = world_seeds.count
    worlds = int(worlds if worlds is not None else SIM["worlds"])
    seeds = list(seeds if seeds is not None else SIM["seeds"])
    slots = int(slots if slots is not None else SIM["slots"])
    jobs = int(jobs if jobs is not None else SIM["jobs"])
    preset = preset or SIM["preset"]
    budget_s, gen_flags = check_sim_settings(
        configs, worlds, seeds, budget if budget is not None else SIM["budget_s"], slots, jobs, preset, flags
    )
    tendency = tendency or ShortcutTendency()
    out = Path(out_dir)
    settings: dict[str, Any] = {
        "backend": "sim",
        "configs": configs,
        "worlds": worlds,
        "seeds": seeds,
        "held_out": held_out,
        "world_seeds": str(world_seeds) if world_seeds is not None else None,
        "budget_s": budget_s,
        "slots": slots,
        "preset": preset,
        "flags": gen_flags.model_dump(mode="json"),
        "eval_limit": SIM["eval_limit"],
        "max_train_steps": SIM["max_train_steps"],
        "shortcuts": tendency.model_dump(mode="json"),
        "jobs": jobs,
    }
    prev = out / "settings.json"
    keep = ("backend", "budget_s", "slots", "flags", "eval_limit", "max_train_steps", "shortcuts")
    if prev.is_file():
        old = json.loads(prev.read_text())
        if {k: old.get(k) for k in keep} != {k: settings[k] for k in keep}:
            raise RsiMasterError(f"{out} holds a bench with other settings; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    prev.write_text(json.dumps(settings, indent=1))
    say = progress or (lambda s: None)
    if world_seeds is not None:
        ranges = [(s, world_seeds.held_out) for s in world_seeds.seeds()]
    else:
        ranges = [(s, False) for s in first_seeds(worlds)]
        if held_out:
            ranges += [(s, True) for s in first_seeds(worlds, held_out=True)]
    plan = [(c, ls, h, s) for ls, h in ranges for s in seeds for c in configs]
    job_kw = {
        "budget_s": budget_s,
        "out": str(out),
        "flags_json": gen_flags.model_dump_json(),
        "slots": slots,
        "tendency_json": tendency.model_dump_json(),
        "key_dir": key_dir,
    }
    t0 = time.time()
    records: list[Any] = []

    def done(raw: str) -> None:
        r = CampaignStats.model_validate_json(raw)
        records.append(r)
        say(
            f"[{time.time() - t0:6.0f}s] {len(records)}/{len(plan)} {r.config} world {r.world_seed} "
            f"seed {r.seed}: normalised {normalised(r):+.3f} (final {r.final:.3f}, base {r.base:.3f}, "
            f"reachable {r.best_reachable:.3f}){' HACKED' if r.hacked else ''}"
        )

    if jobs == 1:
        for c, ls, h, s in plan:
            done(sim_campaign(c, ls, h, s, **job_kw))
    else:
        from concurrent.futures import as_completed

        with tied_process_pool(jobs) as pool:
            futures = [pool.submit(sim_campaign, c, ls, h, s, **job_kw) for c, ls, h, s in plan]
            for fut in as_completed(futures):
                done(fut.result())
    order = {(c, ls, s): i for i, (c, ls, _h, s) in enumerate(plan)}
    records.sort(key=lambda r: order[(r.config, r.world_seed, r.seed)])
    wall_s = round(time.time() - t0, 1)
    summaries = summarise(records, reference=REFERENCE if REFERENCE in configs else None)
    head = (
        f"Simulated bench: {len(records)} campaigns ({len(configs)} configurations x {worlds} worlds"
        f"{' per range' if held_out else ''}"
        f"{f' (generator seeds {world_seeds})' if world_seeds is not None else ''}"
        f" x {len(seeds)} seeds), preset {preset}, budget {budget_s:.0f} "
        f"simulated s, {slots} slots, {jobs} processes, wall {wall_s:.0f} s. Normalised score: "
        "(final - base) / (best reachable - base), ground truth; reference for the paired tests: "
        f"{REFERENCE}.\n\n"
    )
    table = head + "\n".join(summary_lines(summaries)) + "\n"
    (out / "sim-bench.md").write_text(table)
    with (out / "records.jsonl").open("w") as f:
        for r in records:
            f.write(r.model_dump_json() + "\n")
    report = {
        "version": 1,
        "settings": settings,
        "summaries": [s.model_dump(mode="json") for s in summaries],
        "campaigns": len(records),
        "wall_s": wall_s,
    }
    (out / "sim-bench.json").write_text(json.dumps(report, indent=1))
    plots: list[str] = []
    if make_plot and records:
        plots.append(str(plot_summaries(summaries, out / "sim-bench.png")))
        for h in sorted({r.held_out for r in records}):
            name = "sim-timeline-held-out.png" if h else "sim-timeline-development.png"
            plots.append(str(plot_timelines(records, out / name, held_out=h)))
    return {
        "summaries": summaries,
        "table": table,
        "json": str(out / "sim-bench.json"),
        "markdown": str(out / "sim-bench.md"),
        "plots": plots,
        "wall_s": wall_s,
        "campaigns": len(records),
    }


def sim_campaign(
    config: str,
    world_seed: int,
    held_out: bool,
    seed: int,
    *,
    budget_s: float,
    out: str,
    flags_json: str,
    slots: int,
    tendency_json: str,
    key_dir: str | None,
) -> str:
    """One simulated campaign (reused when its `stats.json` exists): its `CampaignStats` as JSON."""

    cid = sim_campaign_id(config, world_seed, seed)
    root = Path(out) / "campaigns" / cid
    path = root / "stats.json"
    if path.is_file():
        return path.read_text()
    world = generate_world(world_seed, GeneratorFlags.model_validate_json(flags_json))
    prior = None
    if CONFIGS[config].prior:
        # What a lab could have measured before the campaign: the pilot's curves on `dev`
        # (`landscape.sim_pilot`, no ground truth), written beside the run and handed over as a
        # file, as `rsi-master run --prior FILE` would; the run stores its own copy.
        root.mkdir(parents=True, exist_ok=True)
        prior = save(sim_pilot(world), root / PRIOR_FILE)
    result = run_campaign(
        config,
        world.task_name,
        seed,
        budget_s,
        out,
        slots=slots,
        eval_limit=int(SIM["eval_limit"]),
        tendency=ShortcutTendency.model_validate_json(tendency_json),
        key_dir=key_dir,
        max_train_steps=int(SIM["max_train_steps"]),
        campaign=cid,
        world=world,
        durable=False,  # throw-away runs: no fsync
        prior=prior,
    )
    stats = sim_campaign_stats(root / "run", world, result, world_seed=world_seed, held_out=held_out, key_dir=key_dir)
    raw = stats.model_dump_json()
    path.write_text(raw)
    return raw
