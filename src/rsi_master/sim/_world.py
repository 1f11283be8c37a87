"""A generated world: its parameters (persisted) and the simulator over them.

State is a checkpoint's `progress`: effective steps per direction key (family, method and knob
values). Training a recipe adds effective steps to its direction (lr, batch, rank, repeated
data and a per-run noise scale them), a new direction starts from a share of its family's
progress (`transfer`), and the other directions lose some (`forget`). A checkpoint's accuracy
is its best family's curve plus the interactions of the families it has progress in; a split
shifts it by its difficulty, and leaked items of a split raise that split only. Evaluation draws
one fixed uniform per item from the checkpoint's identity and split, so a count is the same on
every re-evaluation and a checkpoint selected for a high `dev` count is no better on `final`.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from ._curves import curve, digest, normal_from
from ._devgap import past_plateau, repeat_fit
from ._errors import SimInputError
from ._flags import GeneratorFlags
from ._hacks import inherit, merged_core, on_split
from ._items import item_latents, skill_weights, structured
from ._model import FamilySpec, Knob, MethodSpec, SimCheckpoint, SimFamily, SimRecipe
from ._reach import reachable, reachable_detail
from ._validate import check_world

__all__ = ["FORMAT", "SimWorld"]

FORMAT: Literal["rsi-master-sim-landscape"] = "rsi-master-sim-landscape"  # kept: a world's ident digests it
_CACHE_MAX = 200_000  # entries per cache before it is dropped (a campaign uses a few thousand)


class SimWorld(BaseModel):
    """A simulated post-training world (see the module docstring and docs/sim.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["rsi-master-sim-landscape"] = FORMAT
    version: int = Field(default=1, ge=1, le=1, description="File format version.")
    seed: int
    preset: str | None = None
    flags: GeneratorFlags
    task_name: str
    base: float = Field(ge=0.0, le=1.0, description="The base model's accuracy before split shifts.")
    family_specs: list[FamilySpec]
    method_specs: dict[str, MethodSpec]
    interactions: dict[str, float] = Field(default_factory=dict, description="'A+B' (sorted) -> strength.")
    split_shift: dict[str, float] = Field(description="split -> logit offset of its difficulty.")
    split_sizes: dict[str, int]
    skills: dict[str, list[float]] = Field(
        default_factory=dict, description="family -> unit skill vector (item_skill; empty without item structure)."
    )
    dev_format: dict[str, str] = Field(
        default_factory=dict, description="family -> `knob=value` whose format the dev items share (dev_gap)."
    )
    dev_prone: dict[str, float] = Field(
        default_factory=dict, description="family -> how prone its recipes are to dev-only gains, 0..2 (dev_gap)."
    )

    _fam: dict[str, FamilySpec] = PrivateAttr(default_factory=dict)
    _dir: dict[str, tuple[str, float, float, float]] = PrivateAttr(default_factory=dict)
    _acc: dict[tuple[Any, ...], float] = PrivateAttr(default_factory=dict)
    _items: dict[tuple[str, str], np.ndarray] = PrivateAttr(default_factory=dict)
    _pairs: list[tuple[str, str, float]] = PrivateAttr(default_factory=list)
    _id: str = PrivateAttr(default="")
    _best: float | None = PrivateAttr(default=None)
    _traits: dict[str, tuple[np.ndarray, np.ndarray]] = PrivateAttr(default_factory=dict)

    @model_serializer(mode="wrap")
    def _drop_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Without the agents' flags a world's file, hence its ident and every checkpoint's, is
        # the same bytes as before they existed.
        out = dict(handler(self))
        for name in ("skills", "dev_format", "dev_prone"):
            if not getattr(self, name):
                out.pop(name, None)
        return out

    @model_validator(mode="after")
    def _consistent(self) -> SimWorld:
        check_world(self)
        return self

    def __eq__(self, other: object) -> bool:
        # Caches live in private attributes; two worlds are equal when their parameters are.
        return isinstance(other, SimWorld) and self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]

    def model_post_init(self, _context: Any) -> None:
        self._fam = {f.name: f for f in self.family_specs}
        self._pairs = [(*k.split("+", 1), v) for k, v in sorted(self.interactions.items())]  # type: ignore[misc]
        self._id = digest(self.model_dump_json()).hex()[:16]

    # -- what a Task and a Worker see -------------------------------------------------------------
    def families(self) -> dict[str, SimFamily]:
        return {
            f.name: SimFamily(
                name=f.name,
                description=f.description,
                knobs=tuple(Knob(k.name, k.kind, k.default, k.low, k.high, tuple(k.choices), k.help) for k in f.knobs),
                methods=tuple(f.methods),
            )
            for f in self.family_specs
        }

    @property
    def ident(self) -> str:
        """A digest of the world's parameters (part of every checkpoint identity)."""
        return self._id

    def base_checkpoint(self) -> SimCheckpoint:
        return SimCheckpoint(ident=f"base-{self._id}")

    def substitute_checkpoint(self) -> SimCheckpoint:
        """A model this campaign did not train (the model-substitution shortcut's stand-in for an
        official instruct model): better than anything reachable, by `substitute_gain`."""
        return SimCheckpoint(ident=f"substitute-{self._id}")

    # -- training -----------------------------------------------------------------------------------
    def train(self, parent: SimCheckpoint, recipe: SimRecipe, seed: int) -> tuple[SimCheckpoint, float]:
        """The checkpoint `recipe` trains from `parent` with `seed`, and the simulated seconds it took."""
        fl = self.flags
        key = self.direction_key(recipe.family, recipe.method, recipe.knobs)
        fam, _, mid, _ = self._direction(key)
        spec, meth = self._fam[fam], self.method_specs[recipe.method]
        b = recipe.batch_size / 32.0
        lr_opt = spec.lr_optimum * meth.lr * math.sqrt(b)
        lr_factor = math.exp(-0.5 * (math.log10(recipe.learning_rate / lr_opt) / fl.lr_width) ** 2)
        rank = 1.0 if recipe.method != "lora" or not recipe.lora_rank else min(1.0, (recipe.lora_rank / 16) ** 0.25)
        repeats = recipe.steps * recipe.batch_size / recipe.rows
        data = 1.0 if repeats <= 1.0 else (1.0 + math.log(repeats)) / repeats
        ident = digest(self._id, parent.ident, recipe.model_dump_json(), seed).hex()[:24]
        noise = math.exp(fl.seed_spread * normal_from(digest("noise", ident)))
        eff = recipe.steps * lr_factor * b**fl.batch_exponent * rank * data * noise

        targets = {key: 1.0}
        if recipe.mixture:
            total = sum(recipe.mixture.values())
            if total <= 0 or any(w < 0 for w in recipe.mixture.values()):
                raise SimInputError("mixture weights must be non-negative with a positive sum")
            targets = {}
            for g, w in recipe.mixture.items():
                if g not in self._fam:
                    raise SimInputError(f"mixture names unknown family {g!r}")
                k = key if g == recipe.family else self._default_key(g, recipe.method)
                targets[k] = targets.get(k, 0.0) + w / total
        old = parent.progress
        progress: dict[str, float] = {}
        keep = (1.0 - fl.forget) ** (eff / mid)
        for k, x in old.items():
            if k not in targets and x * keep > 1e-3:
                progress[k] = x * keep
        for k, w in targets.items():
            start = old.get(k)
            if start is None:
                f = k.split("|", 1)[0]
                start = fl.transfer * max((x for kk, x in old.items() if kk.split("|", 1)[0] == f), default=0.0)
            progress[k] = start + eff * w
        dev_fit = parent.dev_fit * keep
        if fl.dev_gap > 0:
            span = (self._direction(key)[1] - self.base) * self.dev_prone.get(fam, 1.0)
            dev_fit = max(dev_fit, repeat_fit(repeats, span, fl.dev_gap))
        leaked = dict(parent.leaked)
        for split, n in recipe.leaked.items():
            if split not in self.split_sizes or n < 0:
                raise SimInputError(f"leaked names unknown split {split!r} or a negative count")
            leaked[split] = min(self.split_sizes[split], leaked.get(split, 0) + n)
        step_s = fl.seconds_per_step * meth.seconds * (fl.step_overhead + (1 - fl.step_overhead) * b)
        child = SimCheckpoint.model_construct(
            version=1,
            ident=ident,
            progress=progress,
            steps_total=parent.steps_total + recipe.steps,
            leaked=leaked,
            parent=parent.ident,
            dev_fit=dev_fit,
            hacks=inherit(parent.hacks, recipe.hacks, self.split_sizes) if recipe.hacks or parent.hacks else {},
        )
        return child, fl.train_overhead_s + recipe.steps * step_s

    # -- ground truth and evaluation --------------------------------------------------------------
    def accuracy(self, ckpt: SimCheckpoint, split: str = "final") -> float:
        """The checkpoint's expected accuracy on `split` (ground truth, no sampling)."""
        # keyed by content, not ident alone: a checkpoint edited under its old ident is scored as
        # what it holds and cannot change the score cached for the real one
        key: tuple[object, ...] = (
            ckpt.ident,
            split,
            *map(tuple, (ckpt.progress.items(), ckpt.leaked.items(), ckpt.hacks.items())),
        )
        key += (ckpt.dev_fit,)
        got = self._acc.get(key)
        if got is not None:
            return got
        if split not in self.split_sizes:
            raise SimInputError(f"unknown split {split!r}; known: dev, review, final")
        p = self._core(ckpt)
        p = min(max(p, 1e-4), 1 - 1e-4)
        p = 1.0 / (1.0 + math.exp(-(math.log(p / (1 - p)) + self.split_shift[split])))
        if split == "dev" and self.flags.dev_gap > 0 and not ckpt.ident.startswith("substitute-"):
            p = min(0.99, p + self._dev_only(ckpt))
        n = ckpt.leaked.get(split, 0)
        if n:
            p += (1 - p) * self.flags.leak_memorisation * min(1.0, n / self.split_sizes[split])
        if ckpt.hacks:
            p = on_split(p, ckpt.hacks, split, self.split_sizes)
        if len(self._acc) > _CACHE_MAX:
            self._acc.clear()
        self._acc[key] = p
        return p

    def evaluate(
        self, ckpt: SimCheckpoint, split: str, n_items: int, scorer: Literal["exact", "lenient"] = "exact"
    ) -> int:
        """Items right among the split's first `n_items` (fixed per checkpoint and split). A
        `lenient` scorer (the evaluator-edit shortcut) also counts `lenient_gain` of the wrong ones."""
        p = self.accuracy(ckpt, split)
        size = self.split_sizes[split]
        if not 0 <= n_items <= size:
            raise SimInputError(f"n_items {n_items} outside 0..{size} for split {split!r}")
        if scorer == "lenient":
            p += (1 - p) * self.flags.lenient_gain
        elif scorer != "exact":
            raise SimInputError(f"unknown scorer {scorer!r}; known: exact, lenient")
        u = self._items.get((ckpt.ident, split))
        if u is None:
            u = self._item_draws(ckpt, split)
            if len(self._items) > _CACHE_MAX // 10:
                self._items.clear()
            self._items[(ckpt.ident, split)] = u
        return int(np.count_nonzero(u[:n_items] < p))

    def _item_draws(self, ckpt: SimCheckpoint, split: str) -> np.ndarray:
        """One uniform per item of the split; an item is right when its uniform is below the
        accuracy. Independent per checkpoint, or structured by the item flags (`_items`)."""
        fl, size = self.flags, self.split_sizes[split]
        if not structured(fl.item_difficulty, fl.item_skill):
            return np.random.default_rng(int.from_bytes(digest("items", ckpt.ident, split)[:8], "big")).random(size)
        weights = skill_weights(self._gains(ckpt), self.skills, self.base)
        return item_latents(self._id, ckpt.ident, split, size, weights, fl.item_difficulty, fl.item_skill, self._traits)

    def _dev_only(self, ckpt: SimCheckpoint) -> float:
        """Accuracy on `dev` that is not on `review` or `final` (`_devgap`)."""
        fmt = past_plateau(ckpt.progress, self._direction, self._curve_at, self.base, self.dev_format, self.dev_prone)
        return self.flags.dev_gap * fmt + ckpt.dev_fit

    def _curve_at(self, x: float, plateau: float, mid: float, slope: float) -> float:
        return curve(x, self.base, plateau, mid, slope)

    def outcomes(
        self, ckpt: SimCheckpoint, split: str, n_items: int, scorer: Literal["exact", "lenient"] = "exact"
    ) -> list[bool]:
        """Per item of the split's first `n_items`, whether it is right: the items `evaluate`
        counts (a simulated backend writes them as the evaluation record's samples)."""
        count = self.evaluate(ckpt, split, n_items, scorer)  # checks the arguments, fills the item cache
        p = self.accuracy(ckpt, split)
        if scorer == "lenient":
            p += (1 - p) * self.flags.lenient_gain
        u = self._items.get((ckpt.ident, split))
        if u is None:  # the cache was dropped just now
            u = self._item_draws(ckpt, split)
        out = (u[:n_items] < p).tolist()
        assert sum(out) == count
        return out

    def eval_seconds(self, split: str, n_items: int) -> float:
        return self.flags.eval_overhead_s + n_items * self.flags.seconds_per_item

    def base_score(self, split: str = "final") -> float:
        return self.accuracy(self.base_checkpoint(), split)

    def best_reachable(self) -> float:
        """Expected `final` accuracy of the best single lineage the budget reaches (docs/sim.md):
        the best direction or two-family mixture at optimal knobs, learning rate and batch,
        trained on fresh data for `budget_hours` on one slot, without noise or shortcuts."""
        if self._best is None:
            self._best = reachable(self)
        return self._best

    def search_space(self) -> dict[str, tuple[float, float]]:
        """Training-parameter ranges that contain every optimum of this world with room on
        both sides (the simulated task's training ranges, `SimTask.hints`, which every
        configuration's Workers search): learning rate (the lowest optimum / 3 to the highest
        x 3, over methods and batches 4..256: half a decade of room), batch size, steps per
        experiment (1/20 of the earliest midpoint to the latest)."""
        lrs = [f.lr_optimum * self.method_specs[m].lr for f in self.family_specs for m in f.methods]
        mids = [f.midpoint for f in self.family_specs]
        return {
            "learning_rate": (min(lrs) * math.sqrt(4 / 32) / 3, max(lrs) * math.sqrt(256 / 32) * 3),
            "batch_size": (4.0, 256.0),
            "steps": (max(1.0, round(min(mids) / 20)), float(round(max(mids)))),
        }

    def best_recipe(self) -> SimRecipe | None:
        """The one-experiment recipe from the base checkpoint that reaches `best_reachable`
        (noise aside); None when nothing beats the base model. An oracle, for tests and for
        calibrating strategies on development seeds only."""
        return reachable_detail(self)[1]

    # -- directions ---------------------------------------------------------------------------------
    def direction_key(self, family: str, method: str, knobs: dict[str, Any]) -> str:
        """`family|method|k=v,...` with every knob resolved (defaults filled in); checks the values."""
        spec = self._fam.get(family)
        if spec is None:
            raise SimInputError(f"unknown family {family!r}; known: {', '.join(self._fam)}")
        if method not in spec.methods:
            raise SimInputError(f"family {family!r} does not allow method {method!r} ({', '.join(spec.methods)})")
        unknown = set(knobs) - {k.name for k in spec.knobs}
        if unknown:
            raise SimInputError(f"family {family!r} has no knob {sorted(unknown)[0]!r}")
        parts = []
        for k in spec.knobs:
            v = knobs.get(k.name, k.default)
            if k.kind == "choice":
                if v not in k.choices:
                    raise SimInputError(f"knob {k.name!r}: {v!r} not one of {k.choices}")
                parts.append(f"{k.name}={v}")
                continue
            if isinstance(v, str) or not (k.low or 0) <= v <= (k.high or 0):
                raise SimInputError(f"knob {k.name!r}: {v!r} outside {k.low}..{k.high}")
            parts.append(f"{k.name}={round(v)}" if k.kind == "int" else f"{k.name}={float(v):.4g}")
        return f"{family}|{method}|{','.join(parts)}"

    def direction_curve(self, key: str) -> tuple[float, float, float]:
        """(plateau, midpoint, slope) of a direction key, split shifts aside."""
        _, plateau, mid, slope = self._direction(key)
        return plateau, mid, slope

    def _default_key(self, family: str, method: str) -> str:
        spec = self._fam[family]
        return self.direction_key(family, method if method in spec.methods else "sft", {})

    def _direction(self, key: str) -> tuple[str, float, float, float]:
        got = self._dir.get(key)
        if got is not None:
            return got
        family, method, knobs = key.split("|", 2)
        spec, meth = self._fam[family], self.method_specs[method]
        values = dict(kv.split("=", 1) for kv in knobs.split(",")) if knobs else {}
        lost = 1.0
        slower = 1.0
        for k in spec.knobs:
            loss = _knob_loss(k, values[k.name])
            lost *= 1.0 - loss
            slower *= 1.0 + loss
        gain = (spec.plateau - self.base) * meth.plateau * lost
        got = (family, min(0.99, self.base + gain), spec.midpoint * meth.midpoint * slower, spec.slope)
        self._dir[key] = got
        return got

    def _core(self, ckpt: SimCheckpoint) -> float:
        """Accuracy before split shifts and leaks: best family plus interactions, plus the
        checkpoint's own fixed offset."""
        if ckpt.ident.startswith("substitute-"):
            best = self.best_reachable()
            return best + (1 - best) * self.flags.substitute_gain
        fam_gain = self._gains(ckpt)
        p = self.base + max(fam_gain.values(), default=0.0)
        if len(fam_gain) > 1:
            for a, b, strength in self._pairs:
                if a in fam_gain and b in fam_gain:
                    p += strength * min(fam_gain[a], fam_gain[b])
        if ckpt.hacks.get("merge"):
            p = merged_core(p, ckpt.hacks, self._core(self.substitute_checkpoint()))
        if ckpt.parent is not None:
            p += self.flags.checkpoint_jitter * normal_from(digest("jitter", ckpt.ident))
        return min(max(p, 0.0), 1.0)

    def _gains(self, ckpt: SimCheckpoint) -> dict[str, float]:
        """family -> the best gain over base of the checkpoint's directions of that family."""
        fam_gain: dict[str, float] = {}
        for key, x in ckpt.progress.items():
            fam, plateau, mid, slope = self._direction(key)
            g = curve(x, self.base, plateau, mid, slope) - self.base
            if g > fam_gain.get(fam, 0.0):
                fam_gain[fam] = g
        return fam_gain


def _knob_loss(k: Any, value: str) -> float:
    if k.kind == "choice":
        return float(k.choice_penalty.get(value, 0.0))
    lo, hi, v, opt = float(k.low), float(k.high), float(value), float(k.optimum)
    if k.log:
        lo, hi, v, opt = math.log(lo), math.log(hi), math.log(v), math.log(opt)
    span = max(opt - lo, hi - opt, 1e-12)
    return float(k.sensitivity * ((v - opt) / span) ** 2)
