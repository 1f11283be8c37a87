"""The landscape's measurement plan: base scores, the curves of every family (each task's
contrasting pair first), the reference recipe and its continuation, in an order that lets
a run cut short still cover whole tasks, and that parallel measurers can share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..tasks import get_task, task_hints
from ._label import CURVE_BATCH, CurveLabel
from ._measure import CURVE_MULTIPLES, DEFAULT_EXAMPLES, Measurer
from ._results import CurveRow, ReferenceRow

__all__ = [
    "REFERENCE_CONTINUE_MULTIPLE",
    "REFERENCE_MULTIPLE",
    "REFERENCE_TRAIN",
    "TASK_ORDER",
    "curve_families",
    "measure_reference",
    "measure_reference_continue",
    "plan",
    "run_plan",
]

# Reference recipes: hand-designed from the curves and the preliminary CPU study (more,
# smaller steps win at fixed compute), given 5 default experiments of compute; the family is
# the task's (`TaskHints.reference`).
REFERENCE_MULTIPLE = 5.0
REFERENCE_TRAIN: dict[str, Any] = {"batch_size": 8, "learning_rate": 1e-3}
# Second stage of a reference: continue the 5x checkpoint on fresh data (seed 3) with a fresh
# cosine schedule. A default campaign (`rsi-master run`: 5 minutes on 2 slots) trains about three
# default experiments on a 2-core host (docs/tasks.md), so "at least 5 times a default campaign's
# compute" is about 15; the 5x stage and this 10x one stay inside the 5x-or-more allowance.
REFERENCE_CONTINUE_MULTIPLE = 10.0
# Order of work: the tasks that learn fastest on this CPU first (program synthesis and
# knowledge in the preliminary study), so a run cut short still covers whole tasks.
TASK_ORDER = ("program_synthesis", "knowledge", "arithmetic", "function_calling")
_REFERENCE_SPEC = {"method": "sft", "epochs": 1.0, "lr_scheduler": "cosine", "warmup_ratio": 0.03, "seed": 0}


def _hints(task: str) -> Any:
    return task_hints(get_task(task))


def curve_families(task: str) -> list[str]:
    """Every generator family of the task, its contrasting pair (`TaskHints.contrast`) first."""

    families = get_task(task).generators()
    first = [f for f in _hints(task).contrast if f in families]
    return first + [f for f in families if f not in first]


def measure_reference(m: Measurer, task: str) -> None:
    family = _hints(task).reference
    if family is None:
        m.log(f"{task} names no reference family (TaskHints.reference); skipping its reference")
        return
    from ..runtime import train

    n = int(DEFAULT_EXAMPLES * REFERENCE_MULTIPLE)
    data = m.dataset(task, family, {}, 1, n)
    run_dir = m.root / "reference" / task
    spec = {**_REFERENCE_SPEC, **REFERENCE_TRAIN}
    result = train(data, run_dir, spec)
    scores = {split: m.evaluate(result.checkpoint_dir, task, split).score for split in ("dev", "final")}
    m.record(
        {
            "key": f"reference/{task}",
            "kind": "reference",
            "task": task,
            "family": family,
            "params": {},
            "spec": spec,
            "examples": n,
            "steps": result.steps,
            "train_seconds": result.train_seconds,
            "tokens": m.tokens_seen(run_dir),
            "scores": scores,
            "checkpoint_digest": result.checkpoint_digest,
            "checkpoint_dir": str(result.checkpoint_dir),
        }
    )
    m.log(f"reference {task}/{family}: dev {scores['dev']:.3f} final {scores['final']:.3f}")


def _first_stage(m: Measurer, task: str) -> tuple[str, dict[str, Any] | None]:
    """The reference's first stage: its own run, or the 5x run of `TaskHints.reference_curve`."""
    hints = _hints(task)
    rows = m.rows()
    if hints.reference_curve is None:
        ref = next((r for r in rows if r.key == f"reference/{task}"), None)
        if not isinstance(ref, ReferenceRow):
            return str(hints.reference), None
        return ref.family, {
            "examples": ref.examples,
            "steps": ref.steps,
            "scores": ref.scores,
            "train_seconds": ref.train_seconds,
            "checkpoint_dir": (ref.model_extra or {}).get("checkpoint_dir"),
        }
    fam = hints.reference_curve
    curve = next((r for r in rows if r.key == f"curve/{task}/{fam}"), None)
    if not isinstance(curve, CurveRow):
        return fam, None
    last = curve.points[-1]
    return fam, {
        "examples": last.examples,
        "steps": last.step,
        "scores": {"dev": last.score},
        "train_seconds": curve.train_seconds,
        "checkpoint_dir": str(m.curve_dir(task, CurveLabel(family=fam)) / "checkpoint"),
    }


def _continue_key(task: str) -> str:
    curve = _hints(task).reference_curve
    return f"reference-continue/{task}" + (f"/{curve}" if curve else "")


def measure_reference_continue(m: Measurer, task: str) -> None:
    family, first = _first_stage(m, task)
    if first is None or not first.get("checkpoint_dir"):
        m.log(f"the first stage of {task}'s reference is not measured yet; skipping its continuation")
        return
    from ..runtime import train

    own = _hints(task).reference_curve is None
    n = int(DEFAULT_EXAMPLES * REFERENCE_CONTINUE_MULTIPLE)
    data = m.dataset(task, family, {}, 3, n)
    run_dir = m.root / "reference-continue" / (task if own else f"{task}.{family}")
    spec = {**_REFERENCE_SPEC, **REFERENCE_TRAIN}
    result = train(data, run_dir, spec, parent=first["checkpoint_dir"])
    scores = {split: m.evaluate(result.checkpoint_dir, task, split).score for split in ("dev", "final")}
    m.record(
        {
            "key": _continue_key(task),
            "kind": "reference",
            "task": task,
            "family": family,
            "params": {},
            "spec": spec,
            "examples": first["examples"] + n,
            "stages": [
                {"examples": first["examples"], "steps": first["steps"], "scores": first["scores"]},
                {"examples": n, "steps": result.steps, "scores": scores},
            ],
            "steps": first["steps"] + result.steps,
            "train_seconds": first["train_seconds"] + result.train_seconds,
            "tokens": m.tokens_seen(run_dir),
            "scores": scores,
            "checkpoint_digest": result.checkpoint_digest,
            "checkpoint_dir": str(result.checkpoint_dir),
        }
    )
    m.log(f"reference-continue {task}/{family}: dev {scores['dev']:.3f} final {scores['final']:.3f}")


Step = tuple[str, Callable[..., None], tuple[Any, ...]]


def plan(
    m: Measurer,
    tasks: Sequence[str],
    *,
    only: str | None = None,
    families: Sequence[str] = (),
    multiples: Sequence[float] = CURVE_MULTIPLES,
    label: Callable[[str], CurveLabel] | None = None,
    params: dict[str, Any] | None = None,
) -> list[Step]:
    """The measurements to make, in order: `(key, function, arguments)`. `only` keeps one
    kind (`base`, `curves`, `reference`, `reference-continue`); `families` keeps those
    families' curves; `label(family)` names the curve variant to measure (another method,
    batch or seed: default the plain family at batch 8, seed 0) and `params` the knobs it fixes."""
    name = label or (lambda f: CurveLabel(family=f, batch=CURVE_BATCH))

    def wanted(f: str) -> bool:
        return not families or f in families

    def curve(t: str, f: str) -> Step:
        lab = name(f)
        return (f"curve/{t}/{lab}", m.curve, (t, lab, tuple(multiples), params))

    steps: list[Step] = []
    if only in (None, "base"):
        steps += [(f"base/{t}/final", m.base, (t,)) for t in tasks]
    pairs = [(t, f) for t in tasks for f in curve_families(t)[:2] if wanted(f)]
    for i in range(0, len(tasks), 2):
        group = tasks[i : i + 2]
        if only in (None, "curves"):
            steps += [curve(t, f) for t, f in pairs if t in group]
        if only in (None, "reference"):
            steps += [(f"reference/{t}", measure_reference, (m, t)) for t in group]
        if only in (None, "reference", "reference-continue"):
            steps += [(_continue_key(t), measure_reference_continue, (m, t)) for t in group]
    if only in (None, "curves"):
        steps += [curve(t, f) for t in tasks for f in curve_families(t)[2:] if wanted(f)]
    return steps


def run_plan(m: Measurer, steps: Sequence[Step], worker: int = 0, workers: int = 1) -> int:
    """Make the measurements not recorded yet; worker k of n takes every n-th of the plan
    (parallel measurers share the results file). The count made."""
    made = 0
    for key, fn, args in steps[worker::workers]:
        if key in m.done():
            continue
        m.log(f"start {key}")
        fn(*args)
        made += 1
    return made
