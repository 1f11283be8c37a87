"""Generator families on a task's `train` pool: directions that need no hand-written generator.

A task directory brings items, a template and a scorer, not a generator. Its pool still gives
four directions, each a `GeneratorFamily` so that the Main opens them like any other and a
Worker runs them through the same ExpOS tools:

- `pool`: SFT (or LoRA, or DPO against the runtime's checker-verified corruptions) on the
  pool's own targets, with recipe knobs: which text is the target, template variant, a nested
  subset, a length filter, and whether rows whose target the scorer fails are kept;
- `pool_prompts`: the pool's prompts with their references, for GRPO with the scorer as reward;
- `self_distill`: completions sampled from a checkpoint of the run on pool prompts, kept when
  the scorer passes them (rejection sampling), for SFT; rows come from `data.sample`;
- `sample_pairs`: a passing and a failing sample of the same prompt, for DPO; `data.sample`.

Epochs over the pool are not a knob: a family returns the `n` rows it is asked for, cycling
through its selection, so the passes are n / |selection|, which the Worker's steps x batch
set. Learning rate and LoRA rank are training parameters (the direction's `train` ranges).

Pure Python: the pool's rows never hold a protected item (the task drops exact repeats when
it loads; ExpOS's contamination gate checks every row again before anything is stored).
"""

from __future__ import annotations

import hashlib
import json
import random
import weakref
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from ._knobs import validate_params, validate_size
from ._protocol import GeneratorFamily, Knob
from ._text import derive_seed

if TYPE_CHECKING:
    from ._dir import FileTask

__all__ = [
    "POOL",
    "POOL_PROMPTS",
    "SAMPLE_PAIRS",
    "SAMPLING_FAMILIES",
    "SELF_DISTILL",
    "pool_families",
    "sample_items",
    "sampled_rows",
]

POOL = "pool"
POOL_PROMPTS = "pool_prompts"
SELF_DISTILL = "self_distill"
SAMPLE_PAIRS = "sample_pairs"
SAMPLING_FAMILIES = frozenset({SELF_DISTILL, SAMPLE_PAIRS})  # rows from `data.sample`, not `data.generate`
TEMPLATES = ("task", "capability", "mixed")
REFERENCE = "reference"  # the target made from the scorer's reference (the answer alone)
# Item fields that usually hold a worked target, preferred as the default target in this order.
PREFERRED_FIELDS = ("completion", "solution", "canonical_solution", "target", "output", "response", "rationale")
PROBE_ITEMS = 8  # pool items scored per target candidate to pick the default target
_PASS = 1.0  # a scorer's "passes": full marks (partial credit is not a correct answer)

# Per task object: scorer verdicts on pool targets, the probe's default, the raw fields.
_CACHE: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _cache(task: FileTask) -> dict[str, Any]:
    try:
        return _CACHE.setdefault(task, {})
    except TypeError:  # a task that takes no weak reference: no cache, the same answers
        return {}


def raw_fields(task: FileTask) -> dict[str, dict[str, Any]]:
    """The pool's items as the `train` split wrote them (id -> fields), without the items the pool
    drops (the gate hands these to a task read without its protected splits)."""
    kept = {item.id for item in task.train_pool()}
    return {k: v for k, v in _raw_fields(task).items() if k in kept}


def _raw_fields(task: FileTask) -> dict[str, dict[str, Any]]:
    """The `train` split's items as written (id -> fields), for targets the rendered pool
    item does not carry (a worked solution beside the answer). Read from the bytes the task
    holds and digested, never from the directory again."""
    cache = _cache(task)
    if "raw" in cache:
        return cache["raw"]
    if getattr(task, "public", False):  # read without the train split's bytes: the gate's rows of the pool
        cache["raw"] = task.raw_pool()
        return cache["raw"]
    out: dict[str, dict[str, Any]] = {}
    splits = getattr(getattr(task, "config", None), "splits", None)
    rel = getattr(splits, "train", None)
    data = getattr(task, "files", {}).get(rel) if rel else None
    if isinstance(data, bytes):
        for line in data.decode("utf-8").split("\n"):
            if line.strip():
                row = json.loads(line)
                if isinstance(row, dict) and "id" in row:
                    out[str(row.pop("id"))] = row
    cache["raw"] = out
    return out


def _reference_text(kind: str, reference: Any) -> str | None:
    """What a correct output looks like, made from the scorer's reference; None where the
    reference is no output (unit tests, a user's Python scorer)."""
    try:
        if kind in ("exact_match", "regex"):
            return str(reference[0])
        if kind == "numeric":
            value = float(reference)
            return str(int(value)) if value.is_integer() else repr(value)
        if kind == "multiple_choice":
            return str(reference["letter"])
        if kind == "function_call":
            return json.dumps(reference[0], ensure_ascii=False, sort_keys=True)
    except (LookupError, TypeError, ValueError):
        return None
    return None


def _target(task: FileTask, item: Any, name: str) -> str | None:
    if name == REFERENCE:
        return _reference_text(getattr(task.scorer, "kind", ""), item.reference)
    value = _raw_fields(task).get(item.id, {}).get(name)
    return value if isinstance(value, str) and value.strip() else None


def _passes(task: FileTask, item: Any, name: str, text: str) -> bool:
    verdicts = _cache(task).setdefault("passes", {})
    key = (item.id, name)
    if key not in verdicts:
        verdicts[key] = task.scorer.score(item, text).score >= _PASS
    return bool(verdicts[key])


def _stable(task: FileTask, pool: Sequence[Any]) -> list[Any]:
    """The pool in an order fixed by the items' ids: a smaller subset is part of a larger one."""
    return sorted(pool, key=lambda it: hashlib.sha256(f"{task.name}\x1f{it.id}".encode()).hexdigest())


def _candidates(task: FileTask, pool: Sequence[Any]) -> tuple[list[str], str | None]:
    """(target choices, the default): the reference where the scorer's kind makes one, and every
    text field the pool's items carry besides their inputs; the default passes the scorer on
    most of the first PROBE_ITEMS items (ties: PREFERRED_FIELDS in order, then the items' other
    fields, then the reference: text the task's author wrote, such as GSM8K's worked answer,
    before the bare answer made from the reference)."""
    cache = _cache(task)
    if "candidates" in cache:
        return cache["candidates"]
    raw = _raw_fields(task)
    inputs = {name for item in pool for name in item.question}
    fields = sorted(
        {k for item in pool for k, v in raw.get(item.id, {}).items() if isinstance(v, str) and k not in inputs}
    )
    choices = ([REFERENCE] if _reference_text(getattr(task.scorer, "kind", ""), pool[0].reference) else []) + fields
    probe = _stable(task, pool)[:PROBE_ITEMS]

    def rank(name: str) -> tuple[int, int]:
        passed = 0
        for item in probe:
            text = _target(task, item, name)
            passed += bool(text is not None and _passes(task, item, name, text))
        order = (
            PREFERRED_FIELDS.index(name) if name in PREFERRED_FIELDS else len(PREFERRED_FIELDS) + (name == REFERENCE)
        )
        return -passed, order

    default = min(choices, key=rank) if choices else None
    cache["candidates"] = (choices, default)
    return choices, default


def _prompt(task: FileTask, item: Any, template: str, rng: random.Random) -> str:
    if template == "mixed":
        template = rng.choice(("task", "capability"))
    # The task's rendered prompt (with whatever its scorer adds, such as lettered choices);
    # the variant puts the target capability in words before it, as an instruction.
    return item.prompt if template == "task" else f"{task.capability}\n\n{item.prompt}"


def _selection(task: FileTask, family: str, params: Mapping[str, Any]) -> list[tuple[Any, str]]:
    """(item, completion) of every pool item the knobs select, in the stable order."""
    pool = _stable(task, task.train_pool())
    pool = pool[: max(1, round(len(pool) * float(params["subset"])))]
    out = []
    for item in pool:
        text = ""
        if family == POOL:
            target = _target(task, item, params["target"])
            if target is None or (params["keep"] == "passing" and not _passes(task, item, params["target"], target)):
                continue
            text = target
        out.append((item, text))
    if out and params["shortest"] < 1.0:
        # A length filter as a fraction, so that every value selects something: short items
        # first is a curriculum of its own, and what a 1,000-token budget leaves of a long pool.
        keep = max(1, round(len(out) * float(params["shortest"])))
        kept = {id(pair) for pair in sorted(out, key=lambda p: (len(p[0].prompt) + len(p[1]), p[0].id))[:keep]}
        out = [pair for pair in out if id(pair) in kept]
    return out


def _generate(
    task: FileTask, family: str, knobs: tuple[Knob, ...], params: Any, seed: int, n: int
) -> list[dict[str, Any]]:
    values = validate_params(family, knobs, params)
    validate_size(seed, n)
    chosen = _selection(task, family, values)
    if not chosen:
        raise ValueError(
            f"{family}: no pool item is left by these knobs ({values}); choose another target, "
            "or keep targets the scorer fails"
        )
    stop = task.stop[0] if task.stop else ""
    rng = random.Random(derive_seed("pool", task.name, family, seed))
    order: list[tuple[Any, str]] = []
    while len(order) < n:  # each pass over the selection in its own shuffled order
        batch = list(chosen)
        rng.shuffle(batch)
        order.extend(batch)
    return [
        {
            "prompt": _prompt(task, item, values["template"], rng),
            "completion": text + stop if text else "",
            "check": item.reference,
            "task": task.name,
            "family": family,
            "item": item.id,
        }
        for item, text in order[:n]
    ]


def _from_checkpoint(family: str, params: Any, seed: int, n: int) -> list[dict[str, Any]]:
    raise ValueError(f"{family} rows are sampled from a checkpoint of the run: use data.sample, not data.generate")


def _common_knobs() -> tuple[Knob, ...]:
    return (
        Knob(
            "template",
            "choice",
            "task",
            choices=TEMPLATES,
            help="prompt as evaluated, with the capability stated before it, or a mix of both",
        ),
        Knob("subset", "float", 1.0, 0.01, 1.0, help="fraction of the pool (nested: a smaller subset is in a larger)"),
        Knob(
            "shortest",
            "float",
            1.0,
            0.05,
            1.0,
            help="keep this fraction of the selection, shortest first (prompt + target)",
        ),
    )


def _sampling_knobs() -> tuple[Knob, ...]:
    return (
        Knob("prompts", "int", 64, 1, 100_000, help="pool prompts sampled on (at most the pool)"),
        Knob("samples_per_prompt", "int", 4, 1, 64, help="completions drawn per prompt"),
        Knob("temperature", "float", 1.0, 0.05, 2.0, help="sampling temperature"),
        Knob("keep_per_prompt", "int", 1, 1, 64, help="most rows kept per prompt (distinct completions)"),
    )


def pool_families(task: FileTask) -> dict[str, GeneratorFamily]:
    """The train-pool families of a task with a pool (`train_pool()` and a `scorer`); {} without."""
    pool = task.train_pool() if callable(getattr(task, "train_pool", None)) else []
    if not pool or getattr(task, "scorer", None) is None:
        return {}
    out: dict[str, GeneratorFamily] = {}
    choices, default = _candidates(task, pool)
    if choices:
        knobs = (
            Knob(
                "target",
                "choice",
                default,
                choices=tuple(choices),
                help="the text trained on: the scorer's answer (`reference`) or a field of the pool's items",
            ),
            Knob(
                "keep",
                "choice",
                "passing",
                choices=("passing", "all"),
                help="rows whose target the scorer passes, or every row",
            ),
            *_common_knobs(),
        )
        out[POOL] = GeneratorFamily(
            POOL,
            "supervised fine-tuning on the train pool's targets",
            knobs,
            partial(_generate, task, POOL, knobs),
            methods=("sft", "lora", "dpo"),
        )
    prompt_knobs = _common_knobs()
    out[POOL_PROMPTS] = GeneratorFamily(
        POOL_PROMPTS,
        "the train pool's prompts, rewarded by the task's scorer (GRPO)",
        prompt_knobs,
        partial(_generate, task, POOL_PROMPTS, prompt_knobs),
        methods=("grpo",),
    )
    for name, what, methods in (
        (SELF_DISTILL, "completions sampled from a checkpoint that the task's scorer passes", ("sft", "lora")),
        (SAMPLE_PAIRS, "a passing and a failing sampled completion of the same prompt", ("dpo",)),
    ):
        out[name] = GeneratorFamily(
            name, what, _sampling_knobs(), partial(_from_checkpoint, name), methods=methods, source="checkpoint"
        )
    return out


def sample_items(task: FileTask, params: Mapping[str, Any], seed: int) -> list[Any]:
    """The pool items a sampling family samples on: `prompts` of them in a seeded order."""
    pool = list(task.train_pool())
    random.Random(derive_seed("sample", task.name, seed)).shuffle(pool)
    return pool[: int(params["prompts"])]


def sampled_rows(
    task: FileTask, family: str, items: Sequence[Any], outputs: Sequence[Sequence[str]], params: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """(rows, counts) from sampled outputs (cut at the stop string), each scored by the task's
    scorer: `self_distill` keeps distinct passing completions, `sample_pairs` pairs distinct
    passing with distinct failing ones of the same prompt; at most `keep_per_prompt` per prompt."""
    if family not in (SELF_DISTILL, SAMPLE_PAIRS):
        raise ValueError(f"{family} is not a sampling family")
    if len(items) != len(outputs):
        raise ValueError("one list of outputs per item")
    stop = task.stop[0] if task.stop else ""
    keep = int(params["keep_per_prompt"])
    rows: list[dict[str, Any]] = []
    counts = {"prompts": len(items), "sampled": 0, "passing": 0, "prompts_passing": 0}
    for item, outs in zip(items, outputs):
        good: list[str] = []
        bad: list[str] = []
        for out in outs:
            counts["sampled"] += 1
            passed = task.scorer.score(item, out).score >= _PASS
            counts["passing"] += passed
            bucket = good if passed else bad
            if (out.strip() or not passed) and out not in bucket:
                bucket.append(out)
        counts["prompts_passing"] += bool(good)
        base = {"prompt": item.prompt, "check": item.reference, "task": task.name, "family": family, "item": item.id}
        if family == SELF_DISTILL:
            rows.extend({**base, "completion": g + stop} for g in good[:keep])
        else:
            rows.extend({**base, "completion": g + stop, "rejected": b + stop} for g, b in list(zip(good, bad))[:keep])
    return rows, counts
