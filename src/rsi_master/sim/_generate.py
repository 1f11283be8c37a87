"""Generate a world from a seed and flags (the same seed and flags give the same world)."""

from __future__ import annotations

import math

import numpy as np

from ._devgap import draw_dev_formats, draw_dev_prone
from ._flags import PRESETS, GeneratorFlags
from ._items import draw_skills, interaction_from_overlap
from ._model import FamilySpec, KnobSpec, MethodSpec
from ._world import SimWorld

__all__ = ["generate_world"]

# Names drawn for families and knobs, so that a world reads like a task (names carry no meaning).
FAMILY_NAMES = (
    "answer_only", "chain_then_answer", "quote_then_answer", "scratchpad", "restate", "plan_then_act",
    "trace_then_answer", "compact", "describe_then_answer", "verify_then_answer", "retrieve_then_answer",
    "outline_then_answer", "examples_first", "critique_then_revise", "steps_then_answer", "table_then_answer",
)  # fmt: skip
INT_KNOBS = ("max_depth", "n_shown", "max_arity", "difficulty", "n_steps", "n_distractors")
FLOAT_KNOBS = ("mix_ratio", "hint_rate", "noise", "negatives")
LOG_KNOBS = ("context_chars", "vocab_size")
CHOICE_KNOBS = {"format": ["plain", "json", "markdown"], "order": ["fixed", "shuffled", "curriculum"],
                "style": ["terse", "verbose"]}  # fmt: skip
# Method effects, as ranges per world: (plateau multiplier, midpoint multiplier, seconds, lr).
METHOD_RANGES = {
    "sft": ((1.0, 1.0), (1.0, 1.0), 1.0, 1.0),
    "lora": ((0.8, 1.0), (1.0, 1.6), 0.6, 10.0),
    "dpo": ((0.7, 1.1), (0.8, 2.0), 1.5, 0.1),
    "grpo": ((0.8, 1.25), (1.5, 4.0), 4.0, 0.3),
}


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi)) if hi > lo else float(lo)


def _log_u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(_u(rng, math.log(lo), math.log(hi))))


def _knobs(rng: np.random.Generator, fl: GeneratorFlags) -> list[KnobSpec]:
    n = int(rng.integers(fl.knobs_per_family[0], fl.knobs_per_family[1] + 1))
    kinds = ["int", "float", "log", "choice"]
    out: list[KnobSpec] = []
    used: set[str] = set()
    for _ in range(n):
        kind = kinds[int(rng.integers(len(kinds)))]
        pool = {"int": INT_KNOBS, "float": FLOAT_KNOBS, "log": LOG_KNOBS, "choice": tuple(CHOICE_KNOBS)}[kind]
        free = [p for p in pool if p not in used]
        if not free:
            continue
        name = free[int(rng.integers(len(free)))]
        used.add(name)
        sens = _u(rng, *fl.knob_sensitivity)
        default: int | float | str
        opt: int | float | str
        if kind == "int":
            hi = int(rng.integers(3, 9))
            opt, default = int(rng.integers(1, hi + 1)), int(rng.integers(1, hi + 1))
            out.append(KnobSpec(name=name, kind="int", default=default, low=1, high=hi, optimum=opt, sensitivity=sens))
        elif kind == "float":
            opt, default = round(_u(rng, 0.0, 1.0), 2), round(_u(rng, 0.0, 1.0), 2)
            out.append(
                KnobSpec(name=name, kind="float", default=default, low=0.0, high=1.0, optimum=opt, sensitivity=sens)
            )
        elif kind == "log":
            opt, default = round(_log_u(rng, 64, 4096)), round(_log_u(rng, 64, 4096))
            out.append(
                KnobSpec(
                    name=name,
                    kind="float",
                    default=default,
                    low=64.0,
                    high=4096.0,
                    log=True,
                    optimum=opt,
                    sensitivity=sens,
                )
            )
        else:
            choices = list(CHOICE_KNOBS[name])
            best = choices[int(rng.integers(len(choices)))]
            penalty = {c: 0.0 if c == best else round(_u(rng, 0.3, 1.0) * sens, 3) for c in choices}
            default = choices[int(rng.integers(len(choices)))]
            out.append(
                KnobSpec(name=name, kind="choice", default=default, choices=choices, optimum=best, sensitivity=sens,
                         choice_penalty=penalty)
            )  # fmt: skip
    return out


def generate_world(seed: int, flags: GeneratorFlags | None = None, preset: str | None = None) -> SimWorld:
    """A world drawn from `flags` (default: the `default` preset) with numpy's generator on `seed`."""
    fl = flags if flags is not None else PRESETS[preset or "default"]
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0x51A])
    base = _u(rng, *fl.base_accuracy)
    n = fl.n_families
    names = [FAMILY_NAMES[i] for i in rng.permutation(len(FAMILY_NAMES))[:n]]
    plateaus = np.sort(rng.uniform(fl.plateau[0], fl.plateau[1], n))[::-1]  # family 0 is the best
    # Later midpoints for higher plateaus, as strongly as bloomer_correlation says.
    lo, hi = math.log(fl.midpoint_steps[0]), math.log(fl.midpoint_steps[1])
    rank = 1.0 - np.arange(n) / max(1, n - 1)
    mix = fl.bloomer_correlation * rank + (1 - fl.bloomer_correlation) * rng.uniform(0, 1, n)
    mids = np.exp(lo + (hi - lo) * mix)
    slopes = rng.uniform(fl.slope[0], fl.slope[1], n)
    if fl.late_bloomer and n >= 2:
        # The best family blooms late; family 1 leads early and plateaus `leader_gap` below it.
        mids[0] = math.exp(lo + (hi - lo) * _u(rng, 0.7, 1.0))
        mids[1] = math.exp(lo + (hi - lo) * _u(rng, 0.0, 0.1))
        gap = _u(rng, *fl.leader_gap)
        plateaus[1] = max(base + 0.02, plateaus[0] - gap)
        slopes[1] = max(slopes[1], slopes[0])
    lr_opts = [_log_u(rng, *fl.lr_optimum) for _ in range(n)]
    others = [m for m in fl.methods if m != "sft"]
    families = []
    for i, name in enumerate(names):
        methods = ["sft"] + [m for m in others if rng.uniform() < fl.method_prob]
        families.append(
            FamilySpec(
                name=name,
                description=f"simulated generator family {name} (plateau and onset hidden)",
                methods=methods,
                knobs=_knobs(rng, fl),
                plateau=round(float(plateaus[i]), 4),
                midpoint=round(float(mids[i]), 1),
                slope=round(float(slopes[i]), 3),
                lr_optimum=float(f"{lr_opts[i]:.3g}"),
            )
        )
    order = rng.permutation(n)  # the best family is not always listed first
    families = [families[int(i)] for i in order]
    method_specs: dict[str, MethodSpec] = {}
    for m in fl.methods:
        (pl, ph), (ml, mh), sec, lr = METHOD_RANGES[m]
        method_specs[m] = MethodSpec(
            plateau=round(_u(rng, pl, ph), 3), midpoint=round(_u(rng, ml, mh), 3), seconds=sec, lr=lr
        )
    interactions = {}
    for i in range(n):
        for j in range(i + 1, n):
            if rng.uniform() < fl.interaction_prob:
                a, b = sorted((names[i], names[j]))
                interactions[f"{a}+{b}"] = round(_u(rng, *fl.interaction), 3)
    shift = {s: round(float(rng.normal(0.0, fl.split_shift)), 3) for s in ("dev", "review", "final")}
    # The agents' flags draw from their own stream, so that without them nothing above changes.
    agents = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0xA6E])
    skills = draw_skills(agents, sorted(names)) if fl.item_skill > 0 else {}
    if skills:  # mixing helps a pair as much as their skills are complementary
        lo, hi = fl.interaction
        interactions = {p: interaction_from_overlap(skills, p, lo, hi) for p in interactions}
    dev_format = (
        draw_dev_formats(
            agents,
            [(f.name, [(k.name, list(k.choices)) for k in f.knobs if k.kind == "choice"]) for f in families],
        )
        if fl.dev_gap > 0
        else {}
    )
    dev_prone = draw_dev_prone(agents, [f.name for f in families]) if fl.dev_gap > 0 else {}
    return SimWorld(
        seed=int(seed),
        preset=preset,
        flags=fl,
        task_name=f"sim-{seed}",
        base=round(base, 4),
        family_specs=families,
        method_specs=method_specs,
        interactions=interactions,
        split_shift=shift,
        split_sizes=dict(fl.split_sizes),
        skills=skills,
        dev_format=dev_format,
        dev_prone=dev_prone,
    )
