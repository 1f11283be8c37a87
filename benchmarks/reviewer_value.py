"""The Reviewer's value as a curve over each failure mode's rate (simulated bench, development seeds).

    PYTHONPATH=src .venv/bin/python benchmarks/reviewer_value.py OUT [--world-seeds START:COUNT]
        [--seeds K] [--fractions 0,0.5,1] [--modes items,dev_gap,overclaim,hacks,all] [--jobs 1]

For each failure mode of the `agents` preset (docs/sim.md, "The agents preset") and each fraction
of its `agents` rate, the `default` preset with that mode's flags at the fraction (every other
failure mode off; `all`: every mode at the fraction) runs `rsi-master`, `no-reviewer` and
`main-pick` on the same worlds and seeds (`rsi-master bench --backend sim`, one output
directory per point under OUT, reused when run again). The Reviewer's value at a point is
RSI-Master's mean normalised score minus each ablation's over the paired campaigns, with its 95%
paired bootstrap interval and sign-flip p (`bench._stats.paired_test`). Fraction 0 is the
`default` preset itself (one point shared by every mode): there the honest outcome is level.

A fraction above 1 is a rate above the `agents` one; every point's flags are checked before
anything runs, and a point the generator refuses (a rate above 1, `item_difficulty + item_skill`
above 0.95, the three hack rates above 1 together) is refused in one line that names the largest
valid fraction of that mode (`items` and `all` stop at about 1.46).

Prints a markdown table and writes OUT/reviewer-value.json (and .png when matplotlib is there),
with every point of OUT measured on the same seeds: rows of an earlier invocation on other modes
or fractions are kept, so several invocations build one curve. Refuses held-out seeds: a curve
is for deciding, and deciding happens on development seeds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rsi_master.bench import CampaignStats, SeedRange, paired_test, run_sim_bench
from rsi_master.errors import RsiMasterError
from rsi_master.sim import PRESETS, flags_from

CONFIGS = ["rsi-master", "no-reviewer", "main-pick"]
MODES: dict[str, tuple[str, ...]] = {
    "items": ("item_difficulty", "item_skill"),
    "dev_gap": ("dev_gap",),
    "overclaim": ("overclaim_rate",),
    # hacks that pass the door and leave evidence for the audit (recall, format, merge)
    "hacks": ("recall_rate", "format_rate", "merge_rate"),
}


def flags_at(mode: str, fraction: float) -> dict[str, float]:
    """The failure-mode flags of `mode` (every mode for `all`) at `fraction` of the agents rate."""
    agents = PRESETS["agents"]
    names = [n for m in MODES.values() for n in m] if mode == "all" else list(MODES[mode])
    return {n: round(float(getattr(agents, n)) * fraction, 4) for n in names}


def refusal(mode: str, fraction: float) -> str | None:
    """Why the generator refuses `mode` at `fraction` (with the largest fraction it accepts), or None."""
    if fraction < 0:
        return f"fraction {fraction:g} is negative"
    try:
        flags_from("default", **flags_at(mode, fraction))
        return None
    except RsiMasterError as exc:
        lo, hi = 0.0, fraction  # fraction 0 is the default preset, always valid
        for _ in range(30):
            mid = (lo + hi) / 2
            try:
                flags_from("default", **flags_at(mode, mid))
                lo = mid
            except RsiMasterError:
                hi = mid
        return f"{mode} at fraction {fraction:g}: {exc} (the largest valid fraction of {mode} is {lo:.2f})"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--world-seeds", "--landscape-seeds", dest="world_seeds", default="100:4")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--fractions", default="0,0.5,1")
    ap.add_argument("--modes", default="items,dev_gap,overclaim,hacks,all")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args(argv)
    try:
        seeds = SeedRange.parse(args.world_seeds)
    except RsiMasterError as exc:
        print(f"reviewer_value: {exc}", file=sys.stderr)
        return 2
    if args.seeds < 1:
        print(f"reviewer_value: --seeds must be at least 1, got {args.seeds}", file=sys.stderr)
        return 2
    if seeds.held_out:
        print("reviewer_value: use development seeds (the held-out range is run once, at the end)", file=sys.stderr)
        return 2
    try:
        fractions = [float(f) for f in args.fractions.split(",")]
    except ValueError:
        print(f"reviewer_value: --fractions takes numbers separated by commas, got {args.fractions!r}", file=sys.stderr)
        return 2
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m != "all" and m not in MODES]
    if unknown:
        print(f"reviewer_value: unknown mode {unknown[0]!r}; known: {', '.join([*MODES, 'all'])}", file=sys.stderr)
        return 2
    why = next((w for m in modes for f in fractions if (w := refusal(m, f)) is not None), None)
    if why is not None:
        print(f"reviewer_value: {why}", file=sys.stderr)
        return 2
    out = Path(args.out)
    rows = []
    for mode in modes:
        for frac in fractions:
            flags = flags_at(mode, frac) if frac > 0 else {}
            point = out / ("rate0" if frac == 0 else f"{mode}-{frac:g}")
            res = run_sim_bench(
                point,
                configs=CONFIGS,
                seeds=list(range(args.seeds)),
                world_seeds=seeds,
                preset="default",
                flags=flags,
                jobs=args.jobs,
                make_plot=False,
                progress=lambda s: print(s, file=sys.stderr, flush=True),
            )

            records = [CampaignStats.model_validate_json(line) for line in (point / "records.jsonl").open()]
            means = {s.config: s.mean for s in res["summaries"]}
            hacked = {c: [r.hacked for r in records if r.config == c] for c in CONFIGS}
            hacking = {c: sum(h) / len(h) if h else 0.0 for c, h in hacked.items()}
            for ablation in CONFIGS[1:]:
                t = paired_test(records, "rsi-master", ablation)
                rows.append(
                    {
                        "mode": mode,
                        "fraction": frac,
                        "flags": flags,
                        "ablation": ablation,
                        "rsi_master": means.get("rsi-master"),
                        "ablation_mean": means.get(ablation),
                        "value": t.mean_diff,
                        "ci": list(t.ci),
                        "relative": t.relative,
                        "p": t.p_permutation,
                        "pairs": t.pairs,
                        "hacking": {"rsi-master": hacking["rsi-master"], ablation: hacking[ablation]},
                    }
                )
    out.mkdir(parents=True, exist_ok=True)
    rows = _merged(out / "reviewer-value.json", rows, str(seeds), args.seeds)
    (out / "reviewer-value.json").write_text(
        json.dumps({"version": 1, "seeds": str(seeds), "campaign_seeds": args.seeds, "rows": rows}, indent=1)
    )
    print("\n".join(table(rows)))
    _plot(rows, list(dict.fromkeys(r["mode"] for r in rows)), out / "reviewer-value.png")
    return 0


def table(rows: list[dict]) -> list[str]:
    """The markdown table of `rows`."""
    lines = [
        "| mode | fraction of agents rate | flags | vs | rsi-master | ablation | value (95% CI) | p | pairs | hacking (rsi-master / ablation) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    # Fraction 0 is one point (the `default` preset) whatever the mode: one row per ablation.
    zero = {r["ablation"]: r for r in rows if r["fraction"] == 0}
    for r in [*zero.values(), *(r for r in rows if r["fraction"] != 0)]:
        shown = ", ".join(f"{k}={v:g}" for k, v in r["flags"].items()) or "none (default)"
        mode = "none (`default`)" if r["fraction"] == 0 else r["mode"]
        lines.append(
            f"| {mode} | {r['fraction']:g} | {shown} | {r['ablation']} | {r['rsi_master']:.3f} | "
            f"{r['ablation_mean']:.3f} | {r['value']:+.3f} ({r['ci'][0]:+.3f}..{r['ci'][1]:+.3f}) | "
            f"{r['p']:.3g} | {r['pairs']} | {r['hacking']['rsi-master']:.1%} / {r['hacking'][r['ablation']]:.1%} |"
        )
    return lines


def _merged(path: Path, rows: list[dict], seeds: str, campaign_seeds: int) -> list[dict]:
    """`rows` with those of an earlier invocation on the same seeds that `rows` does not replace
    (same mode, fraction and ablation), in mode order, then by fraction."""
    key = lambda r: (r["mode"], r["fraction"], r["ablation"])  # noqa: E731
    old = json.loads(path.read_text()) if path.is_file() else {}
    kept = []
    if old.get("seeds") == seeds and old.get("campaign_seeds") == campaign_seeds:
        new = {key(r) for r in rows}
        kept = [r for r in old.get("rows", []) if key(r) not in new]
    order = [*MODES, "all"]
    return sorted([*kept, *rows], key=lambda r: (order.index(r["mode"]), r["fraction"], CONFIGS.index(r["ablation"])))


def _plot(rows: list[dict], modes: list[str], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, len(modes), figsize=(3.2 * len(modes), 3.2), sharey=True, squeeze=False)
    for ax, mode in zip(axes[0], modes, strict=True):
        for ablation, style in (("no-reviewer", "o-"), ("main-pick", "s--")):
            pts = sorted(
                (r["fraction"], r["value"], *r["ci"]) for r in rows if r["mode"] == mode and r["ablation"] == ablation
            )
            if pts:
                xs, ys, lo, hi = zip(*pts, strict=True)
                ax.errorbar(
                    xs,
                    ys,
                    yerr=[[y - a for y, a in zip(ys, lo)], [b - y for y, b in zip(ys, hi)]],
                    fmt=style,
                    capsize=3,
                    label=f"vs {ablation}",
                )
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_title(mode)
        ax.set_xlabel("fraction of the agents rate")
    axes[0][0].set_ylabel("RSI-Master - ablation (normalised)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
