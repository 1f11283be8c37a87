"""Measure the research landscape behind docs/tasks.md and runtime/landscape.json.

    .venv/bin/python scripts/measure_landscape.py run [--only base|curves|reference] [--tasks T ...]
    .venv/bin/python scripts/measure_landscape.py report      # landscape.json + markdown tables

`run` appends one JSON line per finished measurement to benchmarks/landscape/results.jsonl
(tracked; checkpoints and data stay under runs/landscape/, which is not) and skips
measurements already there, so it can be interrupted and resumed. `report` reads
only that file. Every figure comes from the sealed evaluator on the `dev` split (base
and reference also on `final`).

Compute unit: one default experiment = 5,000 training examples seen once (batch 32,
lr 1e-3, ~157 optimizer steps, about a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from rsi_master.runtime import base_model_dir, evaluate as _evaluate, generate, train
from rsi_master.runtime._landscape_data import CURVE_BATCH, LANDSCAPE_PATH, at_batch, split_batch
from rsi_master.tasks import PUBLIC_SEAL_KEY

# Probes and the landscape score the public splits (reproducible from the code; docs quote them).
evaluate = partial(_evaluate, seal_key=PUBLIC_SEAL_KEY)

ROOT = Path("runs/landscape")  # checkpoints and data: large, not tracked
# The raw figures are tracked (a few KB): `report` rebuilds landscape.json from them in any checkout.
RESULTS = Path("benchmarks/landscape/results.jsonl")
DEFAULT_EXAMPLES = 5000
DEFAULT_BATCH = 32

# Learning curves: one run per family over 2 default experiments of fresh data, constant
# learning rate after warm-up so that the snapshots along the way are points of one curve
# (with a decaying schedule an early snapshot would be a run interrupted mid-schedule).
# Batch 8: at equal examples (equal tokens, equal compute) four times the optimizer steps
# of the default batch 32, which is what a 1M model needs (the preliminary CPU study and
# the first landscape runs both found batch 8 ahead at equal data).
CURVE_MULTIPLES = (0.5, 1.0, 2.0, 3.0, 5.0)
CURVE_SPEC = {"method": "sft", "learning_rate": 1e-3, "batch_size": CURVE_BATCH, "epochs": 1.0,
              "lr_scheduler": "constant_with_warmup", "warmup_ratio": 0.03, "seed": 0}


# Measured first: the two most structurally different formats of each task.
FIRST = {
    "arithmetic": ("answer_only", "scratchpad"),
    "function_calling": ("compact", "plan_then_call"),
    "knowledge": ("answer_only", "quote_then_answer"),
    "program_synthesis": ("program_only", "trace_then_program"),
}


def curve_families(task: str) -> list[str]:
    """Every generator family of the task, the contrasting pair first."""
    from rsi_master.tasks import get_task

    first = [f for f in FIRST.get(task, ()) if f in get_task(task).generators()]
    return first + [f for f in get_task(task).generators() if f not in first]


# Reference recipes: hand-designed from the curves and the preliminary CPU study (more,
# smaller steps win at fixed compute), given 5 default experiments of compute.
REFERENCE_MULTIPLE = 5.0
REFERENCE = {
    "arithmetic": ("scratchpad", {}, {"batch_size": 8, "learning_rate": 1e-3}),
    "function_calling": ("compact", {}, {"batch_size": 8, "learning_rate": 1e-3}),
    "knowledge": ("answer_only", {}, {"batch_size": 8, "learning_rate": 1e-3}),
    "program_synthesis": ("program_only", {}, {"batch_size": 8, "learning_rate": 1e-3}),
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def done_keys() -> set[str]:
    if not RESULTS.is_file():
        return set()
    return {json.loads(line)["key"] for line in RESULTS.read_text().splitlines() if line.strip()}


def record(entry: dict[str, Any]) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with open(RESULTS, "a") as f:
        f.write(json.dumps(entry, sort_keys=True) + "\n")


def dataset(task: str, family: str, params: dict[str, Any], seed: int, n: int) -> Path:
    path = ROOT / "data" / f"{task}.{curve_label(family, params)}.s{seed}.n{n}.jsonl"
    if not path.is_file():
        generate(task, family, params, seed, n, path)
    return path


def tokens_seen(run_dir: Path) -> int | None:
    logs = [json.loads(x) for x in (run_dir / "train_log.jsonl").read_text().splitlines() if x.strip()]
    counts = [e["num_tokens"] for e in logs if "num_tokens" in e]
    return int(counts[-1]) if counts else None


def measure_base(task: str) -> None:
    for split in ("dev", "final"):
        r = evaluate(base_model_dir(), task, split)
        record({"key": f"base/{task}/{split}", "kind": "base", "task": task, "split": split, "score": r.score,
                "eval_seconds": r.seconds, "checkpoint_digest": r.checkpoint_digest, "evaluator_digest": r.evaluator_digest})
        log(f"base {task} {split}: {r.score:.3f}")


def curve_label(family: str, params: dict[str, Any] | None, method: str = "sft", batch: int = CURVE_BATCH,
                prompt_loss: bool = False) -> str:
    """A curve's name: the family, with the knobs it fixes away from their defaults and,
    for another training method than full SFT, `+method` (a family of its own); at another
    batch size than the curves' 8, `@bN` (the same recipe family, measured at batch N: it is
    compared with the other families' curves at that batch only)."""
    knobs = f"[{','.join(f'{k}={v}' for k, v in sorted(params.items()))}]" if params else ""
    return at_batch(family + knobs + ("" if method == "sft" else f"+{method}") + ("+prompt_loss" if prompt_loss else ""),
                    batch)


def label_batch(label: str) -> int:
    """The batch size a curve label (or a run's name, `label@sN`) was measured at: its `@bN`, else 8."""
    return split_batch(label)[1]


def step_multiple(step: int, batch: int = CURVE_BATCH) -> float:
    """A curve snapshot's compute: `step` steps of `batch` in default experiments."""
    return round(step * batch / DEFAULT_EXAMPLES, 2)


def parent_label(parent: str) -> str:
    """A probe's starting checkpoint in words: `curves/<task>.<label>/snapshots/step-N` is
    that curve's snapshot at N steps of its batch, i.e. a multiple of the default experiment."""
    path = Path(parent)
    if path.parent.name == "snapshots" and path.name.startswith("step-"):
        run = path.parent.parent.name.split('.', 1)[-1]
        return f"SFT {run} x{step_multiple(int(path.name[5:]), label_batch(run)):g} snapshot"
    return path.parent.name if path.name == "checkpoint" else path.name


def seed_suffix(seed: int) -> str:
    """Seed 0 (the first measurement of every curve) carries no suffix in keys and paths."""
    return f"@s{seed}" if seed else ""


def curve_dir(task: str, label: str, seed: int = 0) -> Path:
    """Where a curve run keeps its checkpoint and snapshots."""
    return ROOT / "curves" / f"{task}.{label}{seed_suffix(seed)}"


def curve_key(task: str, label: str, seed: int = 0) -> str:
    return f"curve/{task}/{label}{seed_suffix(seed)}"


def measure_curve(task: str, family: str, multiples: tuple[float, ...] = CURVE_MULTIPLES,
                  params: dict[str, Any] | None = None, seed: int = 0, method: str = "sft",
                  batch: int = CURVE_BATCH, prompt_loss: bool = False) -> None:
    """One run with snapshots. `seed` draws both the data and the training order/initial
    state of the run (a repeat of the same curve: `report` averages a curve's seeds).
    `method` "lora" trains adapters (rank 16, merged at each snapshot) with the same spec;
    `batch` another batch size (compute is still counted in examples)."""
    n = int(DEFAULT_EXAMPLES * multiples[-1])
    label = curve_label(family, params, method, batch, prompt_loss)
    data = dataset(task, family, params or {}, seed, n)
    run_dir = curve_dir(task, label, seed)
    steps = {m: round(m * DEFAULT_EXAMPLES / batch) for m in multiples}
    total = -(-n // batch)
    snaps = [s for s in steps.values() if s < total]
    t0 = time.time()
    spec = {**CURVE_SPEC, "method": method, "seed": seed, "batch_size": batch, "prompt_loss": prompt_loss}
    result = train(data, run_dir, spec, snapshot_steps=snaps)
    points = []
    for m, s in steps.items():
        ckpt = run_dir / "checkpoint" if s >= total else run_dir / "snapshots" / f"step-{s:06d}"
        ev = evaluate(ckpt, task, "dev")
        points.append({"multiple": m, "step": min(s, total), "examples": min(s, total) * batch, "score": ev.score})
        log(f"curve {task}/{label} seed {seed} x{m}: {ev.score:.3f}")
    record({"key": curve_key(task, label, seed), "kind": "curve", "task": task, "family": family, "label": label,
            "params": params or {}, "spec": spec, "seed": seed,
            "points": points, "train_seconds": result.train_seconds, "tokens": tokens_seen(run_dir),
            "wall_seconds": round(time.time() - t0, 1), "complete": True})


def collect_curve(task: str, family: str) -> None:
    """Record a curve run that was stopped early: evaluate the snapshots it wrote.

    Used when the machine was too loaded to finish the planned horizon; the record says
    `complete: false` and lists only the points actually reached.
    """
    run_dir = ROOT / "curves" / f"{task}.{family}"
    points = []
    for snap in sorted((run_dir / "snapshots").glob("step-*")):
        step = int(snap.name.split("-")[1])
        ev = evaluate(snap, task, "dev")
        multiple = step_multiple(step)
        points.append({"multiple": multiple, "step": step, "examples": step * CURVE_BATCH, "score": ev.score})
        log(f"curve {task}/{family} x{multiple} (collected): {ev.score:.3f}")
    logs = [json.loads(x) for x in (run_dir / "train_log.jsonl").read_text().splitlines() if x.strip()]
    record({"key": f"curve/{task}/{family}", "kind": "curve", "task": task, "family": family, "spec": CURVE_SPEC,
            "points": points, "train_seconds": logs[-1]["elapsed_s"] if logs else None,
            "tokens": tokens_seen(run_dir), "complete": False})


def cmd_probe(args: argparse.Namespace) -> int:
    """One experiment of a given recipe at a given compute (a point off the curves)."""
    import torch

    torch.set_num_threads(args.threads)
    n = args.examples or int(DEFAULT_EXAMPLES * args.multiple)
    data = dataset(args.task, args.family, {}, 2, n)
    parent = Path(args.parent) if args.parent else None
    name = (f"{args.task}.{args.family}.{args.method}.b{args.batch_size}.lr{args.lr}.{args.scheduler}.n{n}"
            + (f".from-{parent.parent.parent.name}-{parent.name}" if parent else ""))
    run_dir = ROOT / "probes" / name
    spec = {"method": args.method, "batch_size": args.batch_size, "learning_rate": args.lr, "epochs": 1.0,
            "lr_scheduler": args.scheduler, "warmup_ratio": 0.03, "seed": 0}
    if args.method in ("dpo", "grpo"):
        spec["task"] = args.task
    result = train(data, run_dir, spec, parent=parent)
    ev = evaluate(result.checkpoint_dir, args.task, "dev")
    record({"key": f"probe/{name}", "kind": "probe", "task": args.task, "family": args.family, "spec": spec,
            "examples": n, "multiple": args.multiple, "steps": result.steps, "train_seconds": result.train_seconds,
            "tokens": tokens_seen(run_dir), "score": ev.score, "parent": str(parent) if parent else "base"})
    log(f"probe {name}: {ev.score:.3f}")
    return 0


def cmd_curve(args: argparse.Namespace) -> int:
    """One learning curve of a family with some knobs fixed (a data-selection recipe, say)."""
    import torch

    torch.set_num_threads(args.threads)
    params = {}
    for kv in args.params:
        k, _, v = kv.partition("=")
        params[k] = json.loads(v) if v[:1] in "-0123456789[{tf\"" else v
    if args.batch < 1:
        raise SystemExit(f"--batch must be a positive integer, got {args.batch}")
    key = curve_key(args.task, curve_label(args.family, params, args.method, args.batch, args.prompt_loss), args.seed)
    if key in done_keys():
        log(f"{key} is recorded already")
        return 0
    measure_curve(args.task, args.family, tuple(args.multiples), params, seed=args.seed, method=args.method,
                  batch=args.batch, prompt_loss=args.prompt_loss)
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    """Re-evaluate recorded curve runs from their kept snapshots (after an evaluator change,
    say a longer `max_new_tokens`) and rewrite their points in place; training is not redone.
    Rewrites results.jsonl: run it while no other measurement is appending to it."""
    rows = _load()
    by_key = {r["key"]: i for i, r in enumerate(rows)}
    for key in args.keys:
        if key not in by_key or rows[by_key[key]]["kind"] != "curve":
            raise SystemExit(f"{key}: no curve record with that key in {RESULTS}")
        rec = rows[by_key[key]]
        run_dir = curve_dir(rec["task"], rec.get("label", rec["family"]), int(rec.get("seed", 0)))
        points = []
        for p in rec["points"]:
            snap = run_dir / "snapshots" / f"step-{p['step']:06d}"
            ckpt = snap if snap.is_dir() else run_dir / "checkpoint"
            if not ckpt.is_dir():
                raise SystemExit(f"{key}: {snap} and {ckpt} are gone; re-run the curve instead")
            ev = evaluate(ckpt, rec["task"], "dev")
            log(f"rescore {key} x{p['multiple']}: {p['score']:.3f} -> {ev.score:.3f}")
            points.append({**p, "score": ev.score})
        rows[by_key[key]] = {**rec, "points": points, "rescored": {"at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                                                   "evaluator_digest": ev.evaluator_digest,
                                                                   "decoding": ev.decoding}}
    RESULTS.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return 0


def cmd_collect(args: argparse.Namespace) -> int:
    for key in args.keys:
        _, task, family = key.split("/")
        if key not in done_keys():
            collect_curve(task, family)
    return 0


def measure_reference(task: str) -> None:
    family, params, overrides = REFERENCE[task]
    n = int(DEFAULT_EXAMPLES * REFERENCE_MULTIPLE)
    data = dataset(task, family, params, 1, n)
    run_dir = ROOT / "reference" / task
    spec = {"method": "sft", "epochs": 1.0, "lr_scheduler": "cosine", "warmup_ratio": 0.03, "seed": 0, **overrides}
    result = train(data, run_dir, spec)
    scores = {}
    for split in ("dev", "final"):
        scores[split] = evaluate(result.checkpoint_dir, task, split).score
    record({"key": f"reference/{task}", "kind": "reference", "task": task, "family": family, "params": params,
            "spec": spec, "examples": n, "steps": result.steps, "train_seconds": result.train_seconds,
            "tokens": tokens_seen(run_dir), "scores": scores, "checkpoint_digest": result.checkpoint_digest,
            "checkpoint_dir": result.checkpoint_dir})
    log(f"reference {task}/{family}: dev {scores['dev']:.3f} final {scores['final']:.3f}")


# Second stage of a reference: continue the 5x checkpoint on fresh data (seed 3) with a
# fresh cosine schedule. A default campaign (`rsi-master run`: 5 minutes on 2 slots) holds
# about ten default experiments, so the issue's "at least 5 times a default campaign's
# compute" allows about 50 default experiments; the stages below stay well inside that.
REFERENCE_CONTINUE_MULTIPLE = 10.0


# A reference whose first stage is a learning curve's run (constant rate, 5x) rather than
# reference/TASK: used where the curves found a better family than the first reference's.
REFERENCE_FROM_CURVE = {"knowledge": "quote_then_answer"}


def _first_stage(task: str) -> tuple[str, dict[str, Any] | None]:
    rows = [json.loads(x) for x in RESULTS.read_text().splitlines() if x.strip()]
    fam = REFERENCE_FROM_CURVE.get(task)
    if fam is None:
        return REFERENCE[task][0], next((r for r in rows if r["key"] == f"reference/{task}"), None)
    curve = next((r for r in rows if r["key"] == f"curve/{task}/{fam}"), None)
    if curve is None:
        return fam, None
    last = curve["points"][-1]
    scores = {"dev": last["score"]}
    return fam, {"examples": last["examples"], "steps": last["step"], "scores": scores,
                 "train_seconds": curve["train_seconds"], "spec": curve["spec"],
                 "checkpoint_dir": str(ROOT / "curves" / f"{task}.{fam}" / "checkpoint")}


def measure_reference_continue(task: str) -> None:
    family, first = _first_stage(task)
    if first is None:
        log(f"the first stage of {task}'s reference is not measured yet; skipping its continuation")
        return
    _, params, overrides = REFERENCE[task]
    if family != REFERENCE[task][0]:
        params = {}
    n = int(DEFAULT_EXAMPLES * REFERENCE_CONTINUE_MULTIPLE)
    data = dataset(task, family, params, 3, n)
    run_dir = ROOT / "reference-continue" / (task if family == REFERENCE[task][0] else f"{task}.{family}")
    spec = {"method": "sft", "epochs": 1.0, "lr_scheduler": "cosine", "warmup_ratio": 0.03, "seed": 0, **overrides}
    result = train(data, run_dir, spec, parent=first["checkpoint_dir"])
    scores = {split: evaluate(result.checkpoint_dir, task, split).score for split in ("dev", "final")}
    key = f"reference-continue/{task}" + ("" if family == REFERENCE[task][0] else f"/{family}")
    record({"key": key, "kind": "reference", "task": task, "family": family,
            "params": params, "spec": spec, "examples": first["examples"] + n,
            "stages": [{"examples": first["examples"], "steps": first["steps"], "scores": first["scores"]},
                       {"examples": n, "steps": result.steps, "scores": scores}],
            "steps": first["steps"] + result.steps, "train_seconds": first["train_seconds"] + result.train_seconds,
            "tokens": tokens_seen(run_dir), "scores": scores, "checkpoint_digest": result.checkpoint_digest,
            "checkpoint_dir": result.checkpoint_dir})
    log(f"reference-continue {task}/{family}: dev {scores['dev']:.3f} final {scores['final']:.3f}")


# Order of work: the tasks that learn fastest on this CPU first (program synthesis and
# knowledge in the preliminary study), so a run cut short still covers whole tasks.
TASK_ORDER = ("program_synthesis", "knowledge", "arithmetic", "function_calling")


def cmd_run(args: argparse.Namespace) -> int:
    import torch

    # One thread per worker: on a shared 2-core machine two OpenMP threads per process
    # spin at barriers whenever either is descheduled (measured: 1.5 s/step became 14 s/step).
    torch.set_num_threads(args.threads)
    from rsi_master.tasks import list_tasks

    tasks = args.tasks or [t for t in TASK_ORDER if t in list_tasks()]
    multiples = tuple(args.multiples)
    plan: list[tuple[str, Any, tuple[str, ...]]] = []
    if args.only in (None, "base"):
        plan += [(f"base/{t}/final", measure_base, (t,)) for t in tasks]
    def wanted(f: str) -> bool:
        return not args.families or f in args.families

    pairs = [(t, f) for t in tasks for f in curve_families(t)[:2] if wanted(f)]
    for i in range(0, len(tasks), 2):
        group = tasks[i : i + 2]
        if args.only in (None, "curves"):
            plan += [(f"curve/{t}/{f}", measure_curve, (t, f, multiples)) for t, f in pairs if t in group]
        if args.only in (None, "reference"):
            plan += [(f"reference/{t}", measure_reference, (t,)) for t in group]
        if args.only in (None, "reference", "reference-continue"):
            plan += [(f"reference-continue/{t}" + (f"/{REFERENCE_FROM_CURVE[t]}" if t in REFERENCE_FROM_CURVE else ""),
                      measure_reference_continue, (t,)) for t in group]
    if args.only in (None, "curves"):
        plan += [(f"curve/{t}/{f}", measure_curve, (t, f, multiples)) for t in tasks for f in curve_families(t)[2:] if wanted(f)]
    # Interleave so that worker k of n takes every n-th item of a task-balanced list.
    ordered = [item for i in range(0, len(plan), 2) for item in plan[i : i + 2]]
    mine = ordered[args.worker :: args.workers]
    for key, fn, fn_args in mine:
        if key in done_keys():
            continue
        log(f"start {key}")
        fn(*fn_args)
    return 0


def _load() -> list[dict[str, Any]]:
    return [json.loads(x) for x in RESULTS.read_text().splitlines() if x.strip()]


def mean_curve(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """One curve from its seeds' records: at each multiple the mean over the seeds that
    measured it (`seeds` says how many); tokens and seconds are the longest run's, whose
    horizon is the curve's last point."""
    longest = max(recs, key=lambda r: max(p["multiple"] for p in r["points"]))
    by_m: dict[float, list[dict[str, Any]]] = {}
    for r in recs:
        for p in r["points"]:
            by_m.setdefault(p["multiple"], []).append(p)
    points = [{**ps[0], "score": round(sum(p["score"] for p in ps) / len(ps), 4), "seeds": len(ps),
               "per_seed": [p["score"] for p in ps]} for m, ps in sorted(by_m.items())]
    return {"points": points, "train_seconds": longest["train_seconds"], "tokens": longest["tokens"],
            "params": longest.get("params", {}), "seeds": sorted(int(r.get("seed", 0)) for r in recs)}


# Two runs of one curve on this model differ by up to 16.5 points at one multiple (more where
# a curve turns), so a single-run point settles only a gap wider than that by a margin.
SINGLE_RUN_GAP = 0.30


def _curve_points(curve: dict[str, Any]) -> dict[float, float]:
    return {p["multiple"]: p["score"] for p in curve["points"]}


def targets(out: dict[str, Any]) -> dict[str, Any]:
    """The issue-3 landscape targets, computed from the recorded figures only.

    * base: at most 15% on every task;
    * reference: at least 40 points above base;
    * family gap: two families of a task at least 15 points apart at the same compute, on
      the means of their runs; curves are compared with curves measured at the same batch
      size only (`@bN`); a gap under `SINGLE_RUN_GAP` counts only where both curves have at
      least two runs at that point;
    * crossing: a family that looks best early and then plateaus below another: ahead by
      at least 5 points (two standard errors of a difference of two 200-item scores near
      10%) at some point of the first half of the shared horizon, at least 5 points behind
      at the last shared point, having gained less than the other over the second half;
      both differences settled as for the gap.
    """
    res: dict[str, Any] = {}
    for name, t in sorted(out["tasks"].items()):
        base = t.get("base", {}).get("score")
        ref = t.get("reference", {}).get("score")
        gap = None
        crossing = None
        curves = {f: _curve_points(c) for f, c in t["curves"].items()}
        runs = {f: {p["multiple"]: p.get("seeds", 1) for p in c["points"]} for f, c in t["curves"].items()}

        def settled(a: str, b: str, m: float, d: float) -> bool:
            """A difference one run cannot explain: wide, or both curves repeated at `m`."""
            return abs(d) >= SINGLE_RUN_GAP or min(runs[a][m], runs[b][m]) >= 2
        fams = sorted(curves)
        for i, a in enumerate(fams):
            for b in fams[i + 1:]:
                if label_batch(a) != label_batch(b):
                    continue
                shared = sorted(set(curves[a]) & set(curves[b]))
                for m in (shared if "[" not in a + b else []):  # gaps: between plain families only
                    d = abs(curves[a][m] - curves[b][m])
                    if not settled(a, b, m, d):
                        continue
                    if gap is None or 100 * d > gap["points"]:
                        hi, lo = (a, b) if curves[a][m] >= curves[b][m] else (b, a)
                        gap = {"points": round(100 * d, 1), "multiple": m, "ahead": hi, "behind": lo}
                if len(shared) < 3:
                    continue
                last = shared[-1]
                mid = max(m for m in shared if m <= last / 2) if any(m <= last / 2 for m in shared) else shared[0]
                early_pts = [m for m in shared if m <= last / 2]
                for early, late in ((a, b), (b, a)):
                    e, l_ = curves[early], curves[late]
                    leads = [m for m in early_pts if settled(early, late, m, e[m] - l_[m])]
                    lead = max(leads, key=lambda m: e[m] - l_[m], default=None)
                    if (lead is not None and e[lead] >= l_[lead] + 0.05 and l_[last] >= e[last] + 0.05
                            and settled(early, late, last, l_[last] - e[last])
                            and (e[last] - e[mid]) < (l_[last] - l_[mid])):
                        found = {"early_leader": early, "overtaken_by": late, "first": lead, "last": last,
                                 "scores": {early: [e[lead], e[last]], late: [l_[lead], l_[last]]}}
                        if crossing is None or (e[lead] - l_[lead]) > (crossing["scores"][crossing["early_leader"]][0]
                                                                        - crossing["scores"][crossing["overtaken_by"]][0]):
                            crossing = found
        res[name] = {
            "base_ok": base is not None and base <= 0.15,
            "reference_gain_points": None if ref is None or base is None else round(100 * (ref - base), 1),
            "reference_ok": ref is not None and base is not None and ref - base >= 0.40,
            "family_gap": gap,
            "family_gap_ok": gap is not None and gap["points"] >= 15,
            "crossing": crossing,
        }
    res["crossing_tasks"] = sorted(n for n, r in res.items() if isinstance(r, dict) and r.get("crossing"))
    res["crossing_ok"] = len(res["crossing_tasks"]) >= 2
    return res


def target_lines(res: dict[str, Any]) -> list[str]:
    lines = ["| task | base <= 15% | reference >= base + 40 | families >= 15 points apart | early leader overtaken |",
             "| --- | --- | --- | --- | --- |"]
    for name, r in res.items():
        if not isinstance(r, dict):
            continue
        gap = r["family_gap"]
        gtxt = (f"{'met' if r['family_gap_ok'] else 'not met'}: {gap['ahead']} {gap['points']} points ahead of "
                f"{gap['behind']} at x{gap['multiple']}") if gap else "fewer than two curves"
        c = r["crossing"]
        ctxt = (f"yes: {c['early_leader']} leads at x{c['first']}, {c['overtaken_by']} ahead at x{c['last']}"
                if c else "no")
        ref = r["reference_gain_points"]
        rtxt = "not measured" if ref is None else f"{'met' if r['reference_ok'] else 'not met'}: +{ref}"
        lines.append(f"| {name} | {'met' if r['base_ok'] else 'not met'} | {rtxt} | {gtxt} | {ctxt} |")
    lines.append(f"crossing on >= 2 tasks: {'met' if res['crossing_ok'] else 'not met'} ({', '.join(res['crossing_tasks']) or 'none'})")
    return lines


def cmd_report(args: argparse.Namespace) -> int:
    rows = _load()
    out: dict[str, Any] = {"version": 1, "split": "dev", "default_experiment": {"examples": DEFAULT_EXAMPLES,
            "batch_size": DEFAULT_BATCH, "learning_rate": 1e-3}, "produced_by": "scripts/measure_landscape.py", "tasks": {}}
    for r in rows:
        t = out["tasks"].setdefault(r["task"], {"curves": {}})
        if r["kind"] == "base":
            t.setdefault("base", {})
            if r["split"] == "dev":
                t["base"]["score"] = r["score"]
            t["base"][f"score_{r['split']}"] = r["score"]
            t["base"]["checkpoint_digest"] = r["checkpoint_digest"]
        elif r["kind"] == "curve":
            t.setdefault("_seeds", {}).setdefault(r.get("label", r["family"]), []).append(r)
        elif r["kind"] == "probe":
            t.setdefault("probes", []).append({k: r.get(k) for k in ("family", "spec", "examples", "multiple", "steps",
                                                                       "train_seconds", "tokens", "score", "parent")})
        elif r["kind"] == "reference":
            t["reference"] = {"score": r["scores"]["dev"], "score_final": r["scores"]["final"], "family": r["family"],
                              "spec": r["spec"], "examples": r["examples"], "steps": r["steps"],
                              "compute_multiple": r["examples"] / DEFAULT_EXAMPLES, "train_seconds": r["train_seconds"],
                              "checkpoint_digest": r["checkpoint_digest"]}
    for t in out["tasks"].values():
        for label, recs in sorted(t.pop("_seeds", {}).items()):
            t["curves"][label] = mean_curve(recs)
    LANDSCAPE_PATH.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    # Markdown for docs/tasks.md.
    print("| task | base (dev / final) | reference (dev / final) | reference recipe |")
    print("| --- | --- | --- | --- |")
    for name, t in sorted(out["tasks"].items()):
        b, ref = t.get("base", {}), t.get("reference")
        rtxt = f"{100 * ref['score']:.1f}% / {100 * ref['score_final']:.1f}%" if ref else "-"
        recipe = (f"{ref['family']}, batch {ref['spec'].get('batch_size')}, lr {ref['spec'].get('learning_rate')}, "
                  f"{ref['examples']} examples ({ref['compute_multiple']:.0f}x), {ref['train_seconds']:.0f}s") if ref else "-"
        print(f"| {name} | {100 * b.get('score', float('nan')):.1f}% / {100 * b.get('score_final', float('nan')):.1f}% | {rtxt} | {recipe} |")
    print()
    mults = sorted({p["multiple"] for t in out["tasks"].values() for c in t["curves"].values() for p in c["points"]})
    print("| task | family | " + " | ".join(f"x{m}" for m in mults) + " | train s |")
    print("| --- | --- | " + " | ".join("---" for _ in mults) + " | --- |")
    for name, t in sorted(out["tasks"].items()):
        for fam, c in t["curves"].items():
            cells = {p["multiple"]: f"{100 * p['score']:.1f}%" + (f" ({p['seeds']})" if p.get("seeds", 1) > 1 else "")
                     for p in c["points"]}
            print(f"| {name} | {fam} | " + " | ".join(cells.get(m, "-") for m in mults) + f" | {c['train_seconds']:.0f} |")
    print()
    print("| task | family | recipe | data | steps | train s | score |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, t in sorted(out["tasks"].items()):
        for p in t.get("probes", []):
            sp = p["spec"]
            recipe = f"{sp['method']}, batch {sp['batch_size']}, lr {sp['learning_rate']}, {sp['lr_scheduler']}"
            start = "base" if p.get("parent") in (None, "base") else parent_label(p["parent"])
            print(f"| {name} | {p['family']} | {recipe}, from {start} | {p['examples']} examples | {p['steps']} | {p['train_seconds']:.0f} | {100 * p['score']:.1f}% |")
    print()
    out["targets"] = targets(out)
    for line in target_lines(out["targets"]):
        print(line)
    LANDSCAPE_PATH.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    return 0


def cmd_recover(args: argparse.Namespace) -> int:
    """Seed results.jsonl from a landscape.json (rows whose raw record was not kept).

    The first landscape runs kept their raw records under runs/ (not tracked); what
    survived is the aggregate in landscape.json. Each recovered row says so
    (`recovered_from`), and no key already in results.jsonl is touched.
    """
    src = json.loads(Path(args.source).read_text())
    have = done_keys()
    rows: list[dict[str, Any]] = []
    for task, t in sorted(src["tasks"].items()):
        b = t.get("base")
        for split in ("dev", "final"):
            if b and f"score_{split}" in b:
                rows.append({"key": f"base/{task}/{split}", "kind": "base", "task": task, "split": split,
                             "score": b[f"score_{split}"], "checkpoint_digest": b.get("checkpoint_digest")})
        for fam, c in t.get("curves", {}).items():
            if args.skip_curves and f"{task}/{fam}" in args.skip_curves:
                continue
            rows.append({"key": f"curve/{task}/{fam}", "kind": "curve", "task": task, "family": fam, "spec": CURVE_SPEC,
                         "points": c["points"], "train_seconds": c.get("train_seconds"), "tokens": c.get("tokens")})
        ref = t.get("reference")
        if ref:
            rows.append({"key": f"reference/{task}", "kind": "reference", "task": task, "family": ref["family"],
                         "params": {}, "spec": ref["spec"], "examples": ref["examples"], "steps": ref["steps"],
                         "train_seconds": ref["train_seconds"], "scores": {"dev": ref["score"], "final": ref["score_final"]},
                         "checkpoint_digest": ref["checkpoint_digest"]})
    n = 0
    for r in rows:
        if r["key"] not in have:
            record({**r, "recovered_from": args.source})
            n += 1
    log(f"recovered {n} rows from {args.source}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--only", choices=("base", "curves", "reference", "reference-continue"), default=None)
    r.add_argument("--tasks", nargs="*", default=None)
    r.add_argument("--families", nargs="*", default=None, help="only these generator families' curves")
    r.add_argument("--worker", type=int, default=0, help="this worker's index (parallel runs share results.jsonl)")
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    r.add_argument("--multiples", type=float, nargs="+", default=list(CURVE_MULTIPLES),
                   help="curve points in default experiments (the last is the run's length)")
    pr = sub.add_parser("probe", help="one experiment of a given recipe")
    pr.add_argument("task")
    pr.add_argument("family")
    pr.add_argument("--method", default="sft")
    pr.add_argument("--batch-size", type=int, default=DEFAULT_BATCH)
    pr.add_argument("--lr", type=float, default=1e-3)
    pr.add_argument("--scheduler", default="cosine")
    pr.add_argument("--multiple", type=float, default=1.0)
    pr.add_argument("--threads", type=int, default=1)
    pr.add_argument("--examples", type=int, default=None, help="training rows (overrides --multiple)")
    pr.add_argument("--parent", default=None, help="parent checkpoint (default: the base model)")
    pr.set_defaults(fn=cmd_probe)
    cu = sub.add_parser("curve", help="one learning curve, optionally with knobs fixed (--params k=v ...)")
    cu.add_argument("task")
    cu.add_argument("family")
    cu.add_argument("--params", nargs="*", default=[], metavar="KNOB=VALUE")
    cu.add_argument("--multiples", type=float, nargs="+", default=list(CURVE_MULTIPLES))
    cu.add_argument("--threads", type=int, default=1)
    cu.add_argument("--method", choices=("sft", "lora"), default="sft", help="full fine-tuning or LoRA adapters")
    cu.add_argument("--batch", type=int, default=CURVE_BATCH,
                    help="batch size (default: the curves' 8); another is a curve of its own, labelled @bN")
    cu.add_argument("--prompt-loss", action="store_true",
                    help="train on the prompt's tokens too (a method of its own, labelled +prompt_loss)")
    cu.add_argument("--seed", type=int, default=0,
                    help="data and training seed; a nonzero seed repeats a curve (report averages the seeds)")
    cu.set_defaults(fn=cmd_curve)
    rs = sub.add_parser("rescore", help="re-evaluate recorded curves from their snapshots, in place")
    rs.add_argument("keys", nargs="+", metavar="curve/TASK/LABEL[@sN]")
    rs.set_defaults(fn=cmd_rescore)
    c = sub.add_parser("collect", help="record curve runs stopped early from their snapshots")
    c.add_argument("keys", nargs="+", metavar="curve/TASK/FAMILY")
    c.set_defaults(fn=cmd_collect)
    r.set_defaults(fn=cmd_run)
    sub.add_parser("report").set_defaults(fn=cmd_report)
    rc = sub.add_parser("recover", help="seed results.jsonl from a landscape.json aggregate")
    rc.add_argument("source", nargs="?", default=str(LANDSCAPE_PATH))
    rc.add_argument("--skip-curves", nargs="*", default=[], metavar="TASK/FAMILY",
                    help="curves being re-measured (their new records replace the aggregate's)")
    rc.set_defaults(fn=cmd_recover)
    args = parser.parse_args()
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
