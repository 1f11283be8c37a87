"""A world in lines a person reads (hidden parameters included: this is the ground truth)."""

from __future__ import annotations

from ._model import SimRecipe
from ._reach import reachable_detail
from ._world import SimWorld

__all__ = ["describe"]


def describe(land: SimWorld) -> list[str]:
    _, best_what = reachable_detail(land)
    out = [f"{land.task_name} (seed {land.seed}, preset {land.preset or 'custom'}, id {land.ident})"]
    for f in sorted(land.family_specs, key=lambda f: -f.plateau):
        knobs = ", ".join(
            f"{k.name}[{k.kind}] default {k.default} best {k.optimum}" for k in f.knobs
        )  # fmt: skip
        out.append(
            f"  {f.name}: plateau {f.plateau:.3f} midpoint {f.midpoint:.0f} steps slope {f.slope:.2f} "
            f"lr* {f.lr_optimum:.2g} methods {'/'.join(f.methods)}; knobs: {knobs or 'none'}"
        )
    for pair, v in sorted(land.interactions.items()):
        out.append(f"  interaction {pair}: {v:+.3f}")
    out += [
        "---",
        f"families: {len(land.family_specs)}",
        f"base_final: {land.base_score('final'):.4f}",
        f"best_reachable: {land.best_reachable():.4f}",
        f"best_reached_by: {_what(best_what)}",
        f"budget_hours: {land.flags.budget_hours}",
        f"split_sizes: {land.split_sizes}",
    ]
    return out


def _what(r: SimRecipe | None) -> str:
    if r is None:
        return "the base model"
    mix = f" mixture {r.mixture}" if r.mixture else ""
    return f"{r.family} {r.method} knobs {r.knobs}{mix} lr {r.learning_rate:.3g} batch {r.batch_size} steps {r.steps}"
