"""How much could any Reviewer be worth to the Main? An oracle bound (simulated bench, development seeds).

    PYTHONPATH=src .venv/bin/python benchmarks/oracle_main.py OUT [--world-seeds 100:8] [--seeds 2]
        [--preset agents] [--configs rsi-master,no-reviewer,oracle]

A Reviewer reaches the returned score only through the Main's decisions: which candidates count
as verified and how they rank, and what the Main's learning curves say each lineage will reach
(the harness re-selects the returned checkpoint on `review` in every configuration, and the
audit drops flagged ones in every configuration). `oracle` is the no-Reviewer policy Main with
perfect information in exactly those two places: every claimed candidate is ranked by its
checkpoint's true `final` accuracy (`SimWorld.accuracy`, no item noise, no `dev` gap, no
overclaim), and every point of the Main's learning curves is that true accuracy instead of the
`dev` score the Worker measured. Same Workers, same actions, same budget rules, same harness.

`oracle` minus `no-reviewer` is what perfect evidence is worth to this Main's allocation; a
Reviewer, whose evidence is a 50-item `review` measurement, can add at most about that. If it is
inside the noise, no Reviewer can earn a significant lead through this Main, whatever it checks.

Measurement only: the oracle reads the simulator's ground truth, which no agent can. Campaigns
run in this process, one after another (`--jobs 1`), so the patches below reach them; run two
invocations on disjoint world ranges to use two cores. Refuses held-out seeds.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from rsi_master.bench import CampaignStats, SeedRange, _configs, _simbench, paired_test, run_sim_bench
from rsi_master.events import Combine
from rsi_master.orchestra import (
    ClaimsNomination,
    PolicyMain,
    _evidence,
    _main_plans,
    _main_verify,
    _reviewer,
    main_agent,
)
from rsi_master.orchestra import _reports as reports
from rsi_master.orchestra._main_parts import Candidate
from rsi_master.orchestra._memory import lineage_examples
from rsi_master.runtime._sim import read_sim_checkpoint

ORACLE = "oracle"
ORACLE_REVIEW = "oracle-review"
ORACLE_COMBINE = "oracle-combine"
# Candidate designs (not oracles): the Reviewer recommends one combination per review, the Main
# tries each pair of families once. `combine-effect`: the compared pair whose items overlap least
# against independence at each item's difficulty (effect > 0, whatever its p); `combine-blind`:
# the leader and the runner-up of the review, whatever their items say (the control).
TRIALS = ("combine-effect", "combine-blind")
# The no-Reviewer control of the combination trials: the claims Main combines its two best claimed
# Workers of different families, each pair of families once.
CLAIMS_COMBINE = "claims-combine"
# A candidate policy (not an oracle): the full system taking its options in the default order
# (a review's critique, a combination, an unexplored direction, more of a lineage) as the
# no-Reviewer Main does, instead of the order `Plans.weighed` prices from the run's evidence.
ORDERED = "ordered"
# A candidate policy: the full system whose trial combinations mix the best claimed recipes (as
# the no-Reviewer Main's are), not only reviewed ones; the trial itself is then judged like any
# lineage, reviews included. Adopted in 828f531: from there on it decides as `rsi-master` does
# (kept so that docs/sim.md's "Trials on claims" command still runs on the code it names).
TRIAL_CLAIMS = "trial-claims"
_state: dict[str, Any] = {"world": None, "active": False, "truth": {}}


def _truth(ctx: Any, digest: str | None) -> float | None:
    """The true `final` accuracy of the checkpoint with this digest (cached per campaign)."""
    if digest is None or _state["world"] is None:
        return None
    cache = _state["truth"]
    if digest not in cache:
        ckpt, _ = read_sim_checkpoint(Path(ctx.expos.run.store.path(digest)))
        cache[digest] = float(_state["world"].accuracy(ckpt, "final"))
    return float(cache[digest])


_original_run_campaign = _simbench.run_campaign


def _run_campaign(config: str, *args: Any, **kw: Any) -> Any:
    _state.update(
        world=kw.get("world"),
        active=config in (ORACLE, ORACLE_REVIEW),
        combine=config == ORACLE_COMBINE,
        trial=config if config in TRIALS else None,
        claims_combine=config == CLAIMS_COMBINE,
        ordered=config == ORDERED,
        trial_claims=config == TRIAL_CLAIMS,
        truth={},
    )
    try:
        return _original_run_campaign(config, *args, **kw)
    finally:
        if _state["active"]:
            print(f"oracle: {len(_state['truth'])} checkpoints read at their true accuracy", flush=True)
        _state.update(
            world=None,
            active=False,
            combine=False,
            trial=None,
            claims_combine=False,
            ordered=False,
            trial_claims=False,
            truth={},
        )


_simbench.run_campaign = _run_campaign  # type: ignore[assignment]

_original_evidence_init = _evidence.Evidence.__init__


def _evidence_init(self: Any, ctx: Any, graph: Any) -> None:
    _original_evidence_init(self, ctx, graph)
    if not _state["active"]:
        return
    st = ctx.expos.projection().state
    key_of = {w.id: w.direction.key() for w in graph.workers.values()}
    points: dict[str, list[tuple[float, float, float]]] = {}
    for x in st.experiments.values():
        dev = x.dev_score()
        if x.status != "completed" or dev is None or not math.isfinite(dev) or x.owner not in key_of:
            continue
        t = _truth(ctx, x.checkpoint)
        if t is None:
            continue
        points.setdefault(key_of[x.owner], []).append((float(lineage_examples(self.trained, x.id)), t, 1.0))
    self.points = points
    every = [p[1] for ps in points.values() for p in ps]
    self.floor = min(every, default=self.floor)


_evidence.Evidence.__init__ = _evidence_init  # type: ignore[method-assign]


class OracleVerifier(_main_verify.ClaimsVerifier):
    """The claimed candidates, ranked by their checkpoints' true `final` accuracy."""

    def verified(self, ctx: Any, graph: Any, tie_s: float) -> list[Candidate]:
        st = ctx.expos.projection().state
        out = []
        for xid, (score, wid, seq) in _main_verify.claims(graph).items():
            x = st.experiments.get(xid)
            t = _truth(ctx, x.checkpoint if x is not None else None)
            out.append(Candidate(xid, wid, score if t is None else t, seq))
        return sorted(out, key=lambda c: (-c.score, c.experiment_id))


class OracleReviewVerifier(_main_verify.ReviewVerifier):
    """The candidates a passing review verified (as the full system's), ranked by their
    checkpoints' true `final` accuracy instead of their 50-item `review` scores."""

    def verified(self, ctx: Any, graph: Any, tie_s: float) -> list[Candidate]:
        st = ctx.expos.projection().state
        out = []
        for c in super().verified(ctx, graph, tie_s):
            x = st.experiments.get(c.experiment_id)
            t = _truth(ctx, x.checkpoint if x is not None else None)
            out.append(c if t is None else c._replace(score=t))
        return sorted(out, key=lambda c: (-c.score, c.experiment_id))


_original_combinations = _main_plans.Plans.combinations


def _families(d: Any) -> frozenset[str]:
    return frozenset([d.family, *(m.get("family") for m in d.mix)])


def _combinations(self: Any, ctx: Any, graph: Any) -> Any:
    """With `oracle-combine`: instead of the reviews' recommendations, every pair of verified
    Workers whose families the world makes interact positively (strongest first), each pair of
    families once; the rest of the plan (the mixed direction, its budget cap) as the policy's."""
    if _state["claims_combine"]:
        yield from _claims_combinations(self, ctx, graph)
        return
    if not _state["combine"]:
        tried = {_families(w.direction) for w in graph.workers.values() if w.direction.mix}
        for out in _original_combinations(self, ctx, graph):
            # a trial design tries each pair of families once
            if _state["trial"] is None or _families(out[4]) not in tried:
                yield out
        return
    world = _state["world"]
    strength = {frozenset(k.split("+", 1)): v for k, v in world.interactions.items()}
    tried = {_families(w.direction) for w in graph.workers.values() if w.direction.mix}
    verified = {c.worker_id for c in self.verifier.verified(ctx, graph, 0.0)}
    done = [w for w in graph.workers.values() if w.id in verified and reports.recipe(w) is not None]
    pairs = []
    for wa in done:
        for wb in done:
            ra, rb = reports.recipe(wa), reports.recipe(wb)
            if wa.id == wb.id or ra.mix or rb.mix or ra.family == rb.family:
                continue
            fams = frozenset([ra.family, rb.family])
            s = strength.get(fams, 0.0)
            if s > 0 and fams not in tried:
                pairs.append((-s, -(ra.dev_score or 0.0), wa, wb, ra, rb))
    seen: set[frozenset[str]] = set()
    for _, _, wa, wb, ra, rb in sorted(pairs, key=lambda t: (t[0], t[1], t[2].id, t[3].id)):
        fams = frozenset([ra.family, rb.family])
        if fams in seen or {wa.id, wb.id, ra.experiment_id} & reports.stopped(graph):
            continue
        seen.add(fams)
        base = _main_plans.continue_direction(wa.direction, ra, ra.experiment_id)
        d = base.model_copy(update={"mix": [{"family": rb.family, "params": rb.params}]})
        if self.capped(ctx, graph, d):
            continue
        yield _Truth(), wa.id, wb.id, ra, d


def _claims_combinations(self: Any, ctx: Any, graph: Any) -> Any:
    tried = {_families(w.direction) for w in graph.workers.values() if w.direction.mix}
    ranked = [c for c in self.verifier.verified(ctx, graph, 0.0) if reports.recipe(graph.workers[c.worker_id])]
    if not ranked:
        return
    wa = graph.workers[ranked[0].worker_id]
    ra = reports.recipe(wa)
    for c in ranked[1:]:
        wb = graph.workers[c.worker_id]
        rb = reports.recipe(wb)
        if rb.family == ra.family or rb.mix or ra.mix:
            continue
        base = _main_plans.continue_direction(wa.direction, ra, ra.experiment_id)
        d = base.model_copy(update={"mix": [{"family": rb.family, "params": rb.params}]})
        if _families(d) in tried or self.capped(ctx, graph, d):
            continue
        yield _Truth(), wa.id, wb.id, ra, d
        return


class _Truth:
    """Stands for the review a combination answers (none: the world's interactions chose it)."""

    id = "oracle"
    report_seq = None


_main_plans.Plans.combinations = _combinations  # type: ignore[method-assign]

_original_compare = _reviewer.EvidenceReviewer._compare
_original_carried = reports.carried


def _compare(ctx: Any, review: Any, r: Any) -> None:
    _original_compare(ctx, review, r)
    mode = _state["trial"]
    if mode is None or any(isinstance(x, Combine) for x in r.recommendations):
        return
    compared = [f for f in r.findings if f.kind == "comparison" and f.significance is not None]
    if mode == "combine-effect":
        compared = sorted((f for f in compared if f.significance.effect > 0), key=lambda f: -f.significance.effect)
    if not compared:
        return
    f = compared[0]
    r.recommendations.append(
        Combine(
            action="combine",
            worker_ids=f.worker_ids[:2],
            experiment_ids=f.experiment_ids[:2],
            reason=f"trial ({mode}): effect {f.significance.effect:+.1f} items, p={f.significance.p:.3g}",
            significance=f.significance,
        )
    )


def _carried(x: Any) -> bool:
    if _state["trial"] is not None and isinstance(x, Combine):
        return True
    return bool(_original_carried(x))


_reviewer.EvidenceReviewer._compare = staticmethod(_compare)  # type: ignore[method-assign,assignment]
reports.carried = _carried


_original_weighed = _main_plans.Plans.weighed


def _weighed(self: Any, ctx: Any, graph: Any) -> Any:
    if _state.get("ordered"):
        return self.default_order, ""
    return _original_weighed(self, ctx, graph)


_main_plans.Plans.weighed = _weighed  # type: ignore[method-assign]

_original_trial = _main_plans.Plans.trial_combination


class _ClaimsRanking:
    """The Main's ranking, except that `verified` is the Workers' claims."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def verified(self, ctx: Any, graph: Any) -> Any:
        return _main_verify.ClaimsVerifier().verified(ctx, graph, 0.0)


def _trial_combination(self: Any, ctx: Any, graph: Any) -> Any:
    if not _state.get("trial_claims"):
        yield from _original_trial(self, ctx, graph)
        return
    real = self.ranker
    object.__setattr__(self, "ranker", _ClaimsRanking(real))
    try:
        found = list(_original_trial(self, ctx, graph))
    finally:
        object.__setattr__(self, "ranker", real)
    yield from found


_main_plans.Plans.trial_combination = _trial_combination  # type: ignore[method-assign]


@main_agent(ORACLE_COMBINE)
def oracle_combine_main() -> PolicyMain:
    return PolicyMain()


@main_agent(ORACLE_REVIEW)
def oracle_review_main() -> PolicyMain:
    return PolicyMain(verifier=OracleReviewVerifier())


@main_agent(ORACLE)
def oracle_main() -> PolicyMain:
    return PolicyMain(verifier=OracleVerifier(), nomination=ClaimsNomination())


_configs.CONFIGS[ORACLE] = _configs.Config(
    ORACLE, "no-Reviewer policy Main that ranks and forecasts on true final accuracy (measurement only)", ORACLE
)


_configs.CONFIGS[ORACLE_REVIEW] = _configs.Config(
    ORACLE_REVIEW,
    "the full system whose Main ranks verified candidates and forecasts on true final accuracy (measurement only)",
    ORACLE_REVIEW,
)


for _t in TRIALS:
    main_agent(_t)(PolicyMain)
    _configs.CONFIGS[_t] = _configs.Config(_t, f"the full system, combinations as trials ({_t})", _t)

main_agent(CLAIMS_COMBINE)(lambda: PolicyMain(verifier=_main_verify.ClaimsVerifier(), nomination=ClaimsNomination()))
_configs.CONFIGS[CLAIMS_COMBINE] = _configs.Config(
    CLAIMS_COMBINE, "the no-Reviewer Main combining its two best claimed families, each pair once", CLAIMS_COMBINE
)

main_agent(TRIAL_CLAIMS)(PolicyMain)
_configs.CONFIGS[TRIAL_CLAIMS] = _configs.Config(
    TRIAL_CLAIMS,
    "the full system whose trial combinations mix the best claimed recipes (a candidate policy)",
    TRIAL_CLAIMS,
)
main_agent(ORDERED)(PolicyMain)
_configs.CONFIGS[ORDERED] = _configs.Config(
    ORDERED, "the full system taking its options in the default order (a candidate policy)", ORDERED
)

_configs.CONFIGS[ORACLE_COMBINE] = _configs.Config(
    ORACLE_COMBINE,
    "the full system whose combinations are the world's positively interacting pairs of verified Workers "
    "(measurement only)",
    ORACLE_COMBINE,
)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--world-seeds", default="100:8")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--preset", default="agents")
    ap.add_argument("--configs", default="rsi-master,no-reviewer,oracle,oracle-review")
    ap.add_argument(
        "--flag", action="append", default=[], metavar="NAME=VALUE", help="a generator flag over the preset"
    )
    a = ap.parse_args(argv)
    ws = SeedRange.parse(a.world_seeds)
    if ws.held_out:
        print("oracle_main: refuses held-out seeds (a bound is for deciding)", file=sys.stderr)
        return 2
    configs = a.configs.split(",")
    res = run_sim_bench(
        a.out,
        configs=configs,
        world_seeds=ws,
        seeds=list(range(a.seeds)),
        preset=a.preset,
        flags={k: float(v) for k, v in (f.split("=", 1) for f in a.flag)} or None,
        jobs=1,
        make_plot=False,
        progress=lambda s: print(s, flush=True),
    )
    print(res["table"])
    recs = [
        CampaignStats.model_validate_json(line) for line in (Path(a.out) / "records.jsonl").read_text().splitlines()
    ]
    for ref in configs:
        for other in configs:
            if other != ref and configs.index(other) > configs.index(ref):
                print(f"{other} vs {ref}: {paired_test(recs, other, ref)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
