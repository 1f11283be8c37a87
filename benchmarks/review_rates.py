"""What RSI-Master's reviews recommend and what its Main does late, read from the ledgers of a
simulated bench's campaigns (`rsi-master bench --backend sim --out DIR`).

    PYTHONPATH=src .venv/bin/python benchmarks/review_rates.py DIR [DIR2] [--plot FILE] [--json FILE]

Per campaign of the `rsi-master` configuration:

- combination rate: reviews recommending at least one `combine`, over reviews; combinations the
  Main started, and their share of Worker slot-seconds;
- continuation rate: `continue` recommendations over candidates scored on `review`;
- late slots far below the leader: Workers the Main added after `late` (75%) of the budget that
  continue a checkpoint whose `review` score was more than 2 binomial standard errors (at the
  split's item count) below the best `review` score recorded before that decision on a
  checkpoint the audit does not flag (a hacked checkpoint's `review` score leads nothing: the
  Main never verifies it, and the harness never returns it); and late continuations in all;
- the normalised final score (`stats.json`), and for `no-reviewer` too.

With two directories (before, after) it prints both and the paired differences of the finals
(a sign-flip permutation test over the campaigns both hold), and `--plot` draws the rates.
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path
from typing import Any

from rsi_master.events import Combine, Continue, ReviewSubmit, typed
from rsi_master.expos import ExpOS
from rsi_master.orchestra import load_graph

LATE = 0.75
FAR_SE = 2.0


def score_se(p: float, n: int) -> float:
    """The standard error of an accuracy `p` measured on `n` items (clipped away from 0 and 1)."""
    q = min(max(p, 0.05), 0.95)
    return math.sqrt(q * (1 - q) / max(1, n))


def campaign(path: Path) -> dict[str, Any]:
    stats = json.loads((path / "stats.json").read_text())
    norm = (stats["final"] - stats["base"]) / max(1e-9, stats["best_reachable"] - stats["base"])
    out: dict[str, Any] = {"config": stats["config"], "key": path.name.split("--", 1)[1], "normalised": norm}
    flagged = set(json.loads((path / "campaign.json").read_text())["audit"]["hacked"])
    with ExpOS.open(path / "run", writable=False) as expos:
        graph = load_graph(expos.reader)
        budget = float(graph.settings.budget_s) if graph.settings else stats["budget_s"]
        start = graph.sessions[0][1] if graph.sessions else 0.0
        n_review = len(expos.contract.evaluator.sample_ids.get("review") or []) or 1
        reviews = [typed(e, ReviewSubmit).payload for e in expos.events("review.submit")]
        recs = [[x for x in r.recommendations if not isinstance(x, str)] for r in reviews]
        scored = sum(1 for r in reviews for f in r.findings if f.split == "review" and f.score is not None)
        out["reviews"] = len(reviews)
        out["reviews_combine"] = sum(1 for rs in recs if any(isinstance(x, Combine) for x in rs))
        out["continue_recs"] = sum(1 for rs in recs for x in rs if isinstance(x, Continue))
        out["candidates_scored"] = scored
        out["nothing"] = sum(1 for r in reviews if any(f.kind == "nothing" for f in r.findings))
        # review scores in ledger order, to know the leader at each decision
        review_at = sorted(
            (e.seq, e.payload["experiment_id"], float(e.payload["score"]))
            for e in expos.events("eval.record")
            if e.payload.get("split") == "review"
        )
        score_of = {x: s for _, x, s in review_at}
        combos = [w for w in graph.workers.values() if w.direction.mix]
        job_s = {j.node: (j.end_ts or j.start_ts) - j.start_ts for j in graph.jobs if j.kind == "worker"}
        total = sum(job_s.values()) or 1.0
        out["combinations"] = len(combos)
        out["combination_share"] = sum(job_s.get(w.id, 0.0) for w in combos) / total
        late = far = 0
        for w in graph.workers.values():
            parent = w.direction.parent
            ev = next((e for e in expos.events("worker.add") if e.payload["worker_id"] == w.id), None)
            if ev is None or parent == "base":
                continue
            t = (ev_ts(ev) - start) / budget
            if t < LATE:
                continue
            late += 1
            known = [s for seq, x, s in review_at if seq < ev.seq and x not in flagged]
            lead = max(known, default=0.0)
            if parent in score_of and score_of[parent] < lead - FAR_SE * score_se(lead, n_review):
                far += 1
        out["late_continuations"] = late
        out["late_far_below"] = far
    return out


def ev_ts(e: Any) -> float:
    from datetime import datetime

    return datetime.fromisoformat(e.ts).timestamp()


def read(root: Path) -> list[dict[str, Any]]:
    return [campaign(p) for p in sorted((root / "campaigns").iterdir()) if (p / "stats.json").exists()]


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rm = [r for r in rows if r["config"] == "rsi-master"]
    reviews = sum(r["reviews"] for r in rm) or 1
    scored = sum(r["candidates_scored"] for r in rm) or 1
    return {
        "campaigns": len(rm),
        "reviews": sum(r["reviews"] for r in rm),
        "combination_rate": sum(r["reviews_combine"] for r in rm) / reviews,
        "continuation_rate": sum(r["continue_recs"] for r in rm) / scored,
        "nothing_rate": sum(r["nothing"] for r in rm) / reviews,
        "combinations_started": sum(r["combinations"] for r in rm),
        "combination_share": sum(r["combination_share"] for r in rm) / max(1, len(rm)),
        "late_continuations": sum(r["late_continuations"] for r in rm),
        "late_far_below": sum(r["late_far_below"] for r in rm),
        **{
            f"normalised_{c}": sum(r["normalised"] for r in rows if r["config"] == c)
            / max(1, sum(1 for r in rows if r["config"] == c))
            for c in sorted({r["config"] for r in rows})
        },
    }


def paired(a: list[dict[str, Any]], b: list[dict[str, Any]], config: str) -> tuple[int, float, float]:
    """(pairs, mean of after - before, two-sided sign-flip permutation p) of one config's finals."""
    x = {r["key"]: r["normalised"] for r in a if r["config"] == config}
    y = {r["key"]: r["normalised"] for r in b if r["config"] == config}
    d = [y[k] - x[k] for k in sorted(x.keys() & y.keys())]
    if not d:
        return 0, 0.0, 1.0
    obs = abs(sum(d))
    rng = random.Random(0)
    hits = sum(abs(sum(v if rng.random() < 0.5 else -v for v in d)) >= obs - 1e-12 for _ in range(20000))
    return len(d), sum(d) / len(d), (hits + 1) / 20001


def main() -> None:
    args = sys.argv[1:]
    plot = args[args.index("--plot") + 1] if "--plot" in args else None
    out_json = args[args.index("--json") + 1] if "--json" in args else None
    dirs = [Path(a) for a in args if not a.startswith("--") and a not in (plot, out_json)]
    runs = [read(d) for d in dirs]
    result: dict[str, Any] = {"dirs": [str(d) for d in dirs], "summaries": [summary(r) for r in runs]}
    for d, s in zip(dirs, result["summaries"], strict=True):
        print(f"--- {d}")
        for k, v in s.items():
            print(f"{k}: {v:.3f}" if isinstance(v, float) else f"{k}: {v}")
    if len(runs) == 2:
        result["paired"] = {}
        for config in ("rsi-master", "no-reviewer"):
            n, mean, p = paired(runs[0], runs[1], config)
            result["paired"][config] = {"n": n, "mean_diff": mean, "p": p}
            print(f"paired {config}: n={n} after-before={mean:+.3f} p={p:.3g}")
        rm_a = {r["key"]: r["normalised"] for r in runs[1] if r["config"] == "rsi-master"}
        nr_a = {r["key"]: r["normalised"] for r in runs[1] if r["config"] == "no-reviewer"}
        d = [rm_a[k] - nr_a[k] for k in sorted(rm_a.keys() & nr_a.keys())]
        if d:
            print(f"after: rsi-master - no-reviewer: n={len(d)} mean={sum(d) / len(d):+.3f}")
    if out_json:
        Path(out_json).write_text(json.dumps(result, indent=1))
    if plot and len(runs) == 2:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        before, after = result["summaries"]
        fig, ax = plt.subplots(1, 2, figsize=(9, 3.2))
        keys = ["combination_rate", "continuation_rate", "combination_share"]
        xs = range(len(keys))
        ax[0].bar([x - 0.2 for x in xs], [before[k] for k in keys], 0.4, label="before")
        ax[0].bar([x + 0.2 for x in xs], [after[k] for k in keys], 0.4, label="after")
        ax[0].set_xticks(
            list(xs), ["reviews with\ncombine", "continue per\nreviewed candidate", "combination\nslot-time"]
        )
        ax[0].set_ylim(0, 1)
        ax[0].legend()
        ax[0].set_title("RSI-Master's reviews")
        keys2 = ["late_continuations", "late_far_below"]
        ax[1].bar([x - 0.2 for x in range(2)], [before[k] for k in keys2], 0.4, label="before")
        ax[1].bar([x + 0.2 for x in range(2)], [after[k] for k in keys2], 0.4, label="after")
        ax[1].set_xticks([0, 1], ["late continuations", "late, far below\nthe leader (>2 se)"])
        ax[1].set_title(f"late-budget slots ({before['campaigns']} campaigns)")
        ax[1].legend()
        fig.tight_layout()
        fig.savefig(plot, dpi=110)
        print(f"plot: {plot}")


if __name__ == "__main__":
    main()
