"""Worker-allowance seconds each configuration gave to lineages below the best `review` lineage
at the time, read from the ledgers of a simulated bench's campaigns (`rsi-master bench --backend
sim --out DIR`, or one point of `benchmarks/reviewer_value.py`).

    PYTHONPATH=src .venv/bin/python benchmarks/misallocation.py DIR [--json FILE]

A Worker the Main adds to continue a checkpoint (its direction's `parent` is not `base`) is given
an allowance (`direction.seconds` of its `worker.add`). Its lineage's `review` score is the
parent checkpoint's, as the ledger records it (the harness scores every finalized candidate on
`review` at the end in every configuration; reviews score some earlier): a measurement the Main
may not have had when it decided, so this counts what the decision cost, not what the Main
could know. The best lineage at the time is the best `review` score of the candidates finalized
before that `worker.add`, less those the audit flags (the harness never returns one). A second
of allowance is misallocated when its lineage's score is below that best; "far below" when it
is more than 2 binomial standard errors below (at the split's item count), outside the noise of
one measurement. With several slots the best lineage can take only one (no two running Workers
continue one checkpoint), so a third count compares with the best lineage no running Worker
continues ("below the best free"): the seconds a slot could have spent on a better lineage. Workers opened from the base (a new direction, a redo) have no lineage yet and
are counted apart, as are continuations of a checkpoint no `review` score was recorded for.
"""

from __future__ import annotations

import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from rsi_master.expos import ExpOS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from review_rates import FAR_SE, score_se


def campaign(path: Path) -> dict[str, Any]:
    """One campaign's allowance seconds: opened from base, continuing, misallocated, far below."""
    stats = json.loads((path / "stats.json").read_text())
    flagged = set(json.loads((path / "campaign.json").read_text())["audit"]["hacked"])
    out = {"config": stats["config"], "base_s": 0.0, "continue_s": 0.0, "unscored_s": 0.0}
    out |= {"misallocated_s": 0.0, "far_below_s": 0.0, "continuations": 0, "misallocated": 0, "far_below": 0}
    out |= {"below_free_s": 0.0, "below_free": 0}
    with ExpOS.open(path / "run", writable=False) as expos:
        n_review = len(expos.contract.evaluator.sample_ids.get("review") or []) or 1
        events = expos.events()
        score_of = {
            e.payload["experiment_id"]: float(e.payload["score"])
            for e in events
            if e.kind == "eval.record" and e.payload.get("split") == "review"
        }
        finalized: list[tuple[int, str]] = [
            (e.seq, x) for e in events if e.kind == "worker.finalize" for x in e.payload.get("candidates") or []
        ]
        done_at = {e.actor.id: e.seq for e in events if e.kind == "worker.finalize"}
        added = [
            (e.seq, e.payload["worker_id"], e.payload["direction"].get("parent"))
            for e in events
            if e.kind == "worker.add"
        ]
        for e in events:
            if e.kind != "worker.add":
                continue
            d = e.payload["direction"]
            seconds, parent = float(d.get("seconds") or 0.0), d.get("parent") or "base"
            if parent == "base":
                out["base_s"] += seconds
                continue
            out["continue_s"] += seconds
            out["continuations"] += 1
            known = [score_of[x] for seq, x in finalized if seq < e.seq and x in score_of and x not in flagged]
            if parent not in score_of or not known:
                out["unscored_s"] += seconds
                continue
            best, own = max(known), score_of[parent]
            if own < best - 1e-9:
                out["misallocated_s"] += seconds
                out["misallocated"] += 1
            if own < best - FAR_SE * score_se(best, n_review):
                out["far_below_s"] += seconds
                out["far_below"] += 1
            running = {p for seq, w, p in added if seq < e.seq and done_at.get(w, math.inf) > e.seq}
            free = [
                score_of[x]
                for seq, x in finalized
                if seq < e.seq and x in score_of and x not in flagged and x not in running
            ]
            if free and own < max(free) - 1e-9:
                out["below_free_s"] += seconds
                out["below_free"] += 1
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per configuration: the sums over its campaigns, and the misallocated shares of continuing."""
    by: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in rows:
        s = by[r["config"]]
        s["campaigns"] += 1
        for k, v in r.items():
            if k != "config":
                s[k] += v
    for s in by.values():
        s["misallocated_share"] = s["misallocated_s"] / max(1e-9, s["continue_s"])
        s["far_below_share"] = s["far_below_s"] / max(1e-9, s["continue_s"])
        s["below_free_share"] = s["below_free_s"] / max(1e-9, s["continue_s"])
    return {c: dict(s) for c, s in sorted(by.items())}


def main(argv: list[str]) -> int:
    out_json = argv[argv.index("--json") + 1] if "--json" in argv else None
    dirs = [Path(a) for a in argv if not a.startswith("--") and a != out_json]
    if len(dirs) != 1 or not (dirs[0] / "campaigns").is_dir():
        print("misallocation: give one bench directory (it holds campaigns/)", file=sys.stderr)
        return 2
    rows = [campaign(p) for p in sorted((dirs[0] / "campaigns").iterdir()) if (p / "stats.json").is_file()]
    result = summary(rows)
    print(
        "| config | campaigns | continuations | allowance s continuing | misallocated s (share; Workers) "
        "| > 2 se below s (share; Workers) | below the best free s (share; Workers) | unscored s "
        "| opened from base s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for c, s in result.items():
        print(
            f"| {c} | {s['campaigns']:.0f} | {s['continuations']:.0f} | {s['continue_s']:.0f} | "
            f"{s['misallocated_s']:.0f} ({s['misallocated_share']:.1%}; {s['misallocated']:.0f}) | "
            f"{s['far_below_s']:.0f} ({s['far_below_share']:.1%}; {s['far_below']:.0f}) | "
            f"{s['below_free_s']:.0f} ({s['below_free_share']:.1%}; {s['below_free']:.0f}) | "
            f"{s['unscored_s']:.0f} | {s['base_s']:.0f} |"
        )
    if out_json:
        Path(out_json).write_text(json.dumps({"dir": str(dirs[0]), "campaigns": rows, "summary": result}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
