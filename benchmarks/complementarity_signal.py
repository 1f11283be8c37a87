"""Can per-sample evidence tell which families interact? (simulated worlds, development seeds)

    PYTHONPATH=src .venv/bin/python benchmarks/complementarity_signal.py [--world-seeds 100:16]
        [--items 50] [--preset agents]

Under `item_difficulty`/`item_skill` (docs/sim.md, "Item structure") a pair of families mixed
gains `strength x min(gains)` when the pair interacts (drawn per pair), and the strength of an
interacting pair follows how little their skills overlap. The Reviewer's complementarity test
reads the overlap from per-sample outcomes: items only one of two checkpoints solves against what
independence predicts at each item's difficulty (`orchestra._stats.stratified_complementarity`).

For every pair of families of each world: one checkpoint of each family trained to twice its
midpoint, scored on the first `--items` `review` items; item difficulty from checkpoints of the
other families (at one, two and three midpoints, up to 8), as the Reviewer's pool does. Prints how
the test's effect (items) correlates with the skill overlap and with the true strength, how often
the test fires at p < 0.05 on strongly interacting pairs (strength > 0.2) and on the rest, and in
how many worlds the pair with the largest effect is a strongly interacting one (against what a
pair drawn at random would give). Ground truth from the generator; no campaign runs.
"""

from __future__ import annotations

import argparse
import itertools
import sys

import numpy as np

from rsi_master.bench import SeedRange
from rsi_master.orchestra._stats import difficulty_strata, stratified_complementarity
from rsi_master.sim import flags_from, generate_world
from rsi_master.sim._model import SimCheckpoint

STRONG = 0.2


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world-seeds", default="100:16")
    ap.add_argument("--items", type=int, default=50)
    ap.add_argument("--preset", default="agents")
    a = ap.parse_args(argv)
    ws = SeedRange.parse(a.world_seeds)
    if ws.held_out:
        print("complementarity_signal: refuses held-out seeds", file=sys.stderr)
        return 2
    flags = flags_from(a.preset)
    rows = []  # (world, strength, effect, p, overlap)
    hits, chance, worlds = 0, 0.0, 0
    for seed in ws.seeds():
        w = generate_world(seed, flags)
        fams = [f.name for f in w.family_specs]
        strength = {frozenset(k.split("+", 1)): v for k, v in w.interactions.items()}
        out: dict[tuple[str, int], dict[str, bool]] = {}
        for f in fams:
            key = w._default_key(f, "sft")
            mid = w._direction(key)[2]
            for j in range(3):
                ck = SimCheckpoint.model_construct(
                    version=1,
                    ident=f"signal-{seed}-{f}-{j}",
                    progress={key: mid * (1.0 + j)},
                    steps_total=1,
                    leaked={},
                    parent="base",
                    dev_fit=0.0,
                    hacks={},
                )
                out[(f, j)] = {f"i{i}": ok for i, ok in enumerate(w.outcomes(ck, "review", a.items))}
        mine = []
        for fa, fb in itertools.combinations(fams, 2):
            others = [out[(f, j)] for f in fams for j in range(3) if f not in (fa, fb)][:8]
            sig = stratified_complementarity(difficulty_strata(out[(fa, 1)], out[(fb, 1)], others))
            s = strength.get(frozenset([fa, fb]), 0.0)
            overlap = float(np.dot(w.skills[fa], w.skills[fb])) if w.skills else 0.0
            mine.append((s, sig.effect, sig.p, overlap))
        rows += mine
        if mine:
            worlds += 1
            hits += max(mine, key=lambda r: r[1])[0] > STRONG
            chance += float(np.mean([r[0] > STRONG for r in mine]))
    st, ef, p, ov = (np.array([r[i] for r in rows]) for i in range(4))
    strong = st > STRONG
    print(
        f"{len(rows)} pairs of {worlds} worlds ({a.preset}, generator seeds {a.world_seeds}), {a.items} review items; "
        f"{int(strong.sum())} interact strongly (strength > {STRONG})"
    )
    print(
        f"corr(effect, -overlap) = {np.corrcoef(ef, -ov)[0, 1]:.2f}; corr(effect, strength) = {np.corrcoef(ef, st)[0, 1]:.2f}"
    )
    print(
        f"test fires (p < 0.05): {np.mean(p[strong] < 0.05):.0%} of strongly interacting pairs, "
        f"{np.mean(p[~strong] < 0.05):.0%} of the others"
    )
    print(f"largest effect is a strongly interacting pair in {hits} of {worlds} worlds; a random pair: {chance:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
