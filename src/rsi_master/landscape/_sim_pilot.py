"""A prior for a simulated landscape: what a lab's pilot measures on it before a campaign.

`sim_pilot(land)` measures one learning curve per generator family of a `sim.SimWorld`, the
way `rsi-master landscape measure` measures the built-in suite: full SFT of the family at its
default knobs, at the curves' batch and rate (`CURVE_SPEC`), one run per seed on fresh data with
snapshots at several default experiments, each snapshot scored on the whole `dev` split. It acts
only through the simulator's public actions (`base_checkpoint`, `train`, `evaluate` on `dev`), so
its figures carry the landscape's own noise (seed-to-seed spread, checkpoint jitter, binomial
items) and nothing of its hidden parameters or of the protected `review` and `final` splits.
The result is an ordinary landscape file (`Landscape`), the same seed and flags give the same
bytes, and a run takes it as it takes any other prior (`rsi-master run --prior FILE`).

The simulator has no tokens: a curve's `tokens` are the examples it trained on, so that the
landscape's seconds per token (`Landscape.seconds_per_token`) is the simulated seconds of a
training example and the Main prices a campaign's compute in the curves' multiples correctly.
"""

from __future__ import annotations

from typing import Any, Final

from ..sim import SimRecipe
from ._label import CURVE_BATCH
from ._measure import CURVE_SPEC
from ._model import Base, Curve, DefaultExperiment, Landscape, Point, TaskLandscape

__all__ = ["PILOT_MULTIPLES", "PILOT_SEEDS", "PILOT_UNIT", "pilot_seconds", "sim_pilot"]

# A default experiment of the pilot: 1,000 steps at batch 32, the simulator's reference
# experiment (docs/sim.md: 360 s on the default preset; a 10-hour, 4-slot campaign buys about
# 380 of them). The built-in suite's 5,000 examples would end every curve before a simulated
# family turns (midpoints of 400 to 20,000 steps at batch 32).
PILOT_UNIT: Final = 32_000
# Snapshots, in default experiments: a longest run of 8 (32,000 steps at batch 8, about 1.5
# simulated hours on the default preset), which sees most families turn without costing more
# than a fraction of the campaign it informs (`pilot_seconds`).
PILOT_MULTIPLES: Final = (0.5, 1.0, 2.0, 4.0, 8.0)
PILOT_SEEDS: Final = 2  # runs per curve: its seed-to-seed spread, as the shipped landscape's two-seed curves


def sim_pilot(land: Any, *, multiples: tuple[float, ...] = PILOT_MULTIPLES, seeds: int = PILOT_SEEDS) -> Landscape:
    """The pilot's landscape of `land` (a `sim.SimWorld`): its task's base `dev` score and one
    curve per family (labelled by the family alone: default knobs, SFT, batch `CURVE_BATCH`)."""

    n_dev = int(land.split_sizes["dev"])
    base = land.base_checkpoint()

    def dev(ckpt: Any) -> float:
        return round(land.evaluate(ckpt, "dev", n_dev) / n_dev, 4)

    lr, batch = float(CURVE_SPEC["learning_rate"]), CURVE_BATCH
    ends = [round(m * PILOT_UNIT / batch) for m in multiples]
    curves: dict[str, Curve] = {}
    for family in sorted(land.families()):
        scores: list[list[float]] = [[] for _ in multiples]
        seconds = 0.0
        for seed in range(seeds):
            ckpt, done = base, 0
            for i, end in enumerate(ends):
                # the next snapshot: the same run continued on fresh rows to `end` steps
                recipe = SimRecipe(
                    family=family, learning_rate=lr, batch_size=batch, steps=end - done, rows=(end - done) * batch
                )
                ckpt, s = land.train(ckpt, recipe, seed)
                seconds += s
                done = end
                scores[i].append(dev(ckpt))
        curves[family] = Curve(
            points=[
                Point(
                    multiple=m,
                    score=round(sum(per) / len(per), 4),
                    step=end,
                    examples=end * batch,
                    seeds=len(per),
                    per_seed=per,
                )
                for m, end, per in zip(multiples, ends, scores, strict=True)
            ],
            train_seconds=round(seconds / seeds, 2),
            tokens=ends[-1] * batch,
            seeds=list(range(seeds)),
        )
    base_dev = dev(base)
    return Landscape(
        default_experiment=DefaultExperiment(examples=PILOT_UNIT, batch_size=32, learning_rate=lr),
        produced_by=f"rsi-master sim pilot (landscape {land.ident}, generator seed {land.seed})",
        tasks={land.task_name: TaskLandscape(base=Base(score=base_dev, score_dev=base_dev), curves=curves)},
    )


def pilot_seconds(prior: Landscape) -> float:
    """Simulated slot-seconds of training the pilot's curves cost (every seed's run)."""
    return sum((c.train_seconds or 0.0) * max(1, len(c.seeds)) for t in prior.tasks.values() for c in t.curves.values())
