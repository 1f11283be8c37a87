"""The programmatic Main agent: acts only at orchestration events, only through the
Main tools, and records every decision with its rationale and evidence seqs.

Policy, in order of priority whenever a slot needs work:

1. verify: two or more finalized Workers whose candidates no cross-Worker review has
   covered yet get one (late in the budget a single one is compared with the best
   already verified Worker instead: selection needs comparisons, not new directions);
2. revise: a failed review, or a passing review's critique of the leading checkpoint
   (`continue exp-...`), becomes a new Worker that answers it: continue from the
   verified checkpoint on fresh data with its verified recipe (its learning rate first,
   then down to half of it);
3. branch: a passing review that found complementary Workers (`combine w1 w2`) becomes a
   Worker whose data mixes both verified recipes, starting from the verified leader;
   otherwise an unexplored direction of the task;
4. continue: more of the best verified direction.

A direction may not take more than `share` of the budget before a passing cross-Worker
review covers it. After `late` of the budget verification and selection come first and no
new direction is opened; a slot they leave idle continues the best verified lineage, sized
to end before the time kept for the last comparison. At the end, the reviewed candidates
are nominated and the stop recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._directions import Direction, Range, default_directions, opening_curve, subset_direction
from ._graph import ResearchGraph, WorkerNode
from ._memory import lineage_examples
from ._protocols import MainContext, main_agent
from ._worker import parse_recipe

__all__ = ["PolicyMain", "expected_scores"]

_SEED_STRIDE = 100_003  # worker number * stride + direction seed: unique per Worker
# An expected score the landscape's curves tell from zero: 4 of 200 items, twice the
# spread of a one-run score near 1% (about +-0.7 points on 200 items).
PAYS = 0.02

# Tie-break of the opening order, and the whole order for a task the landscape has no
# curves for: the families the docs' reference recipes use first.
PRIOR = {
    "arithmetic": ("scratchpad", "restate", "answer_only"),
    "function_calling": ("compact", "verbose", "plan_then_call"),
    "knowledge": ("answer_only", "chain_then_answer", "quote_then_answer"),
    "program_synthesis": ("program_only", "trace_then_program", "describe_then_program"),
}


@main_agent("policy")
class PolicyMain:
    def __init__(self, share: float = 0.4, late: float = 0.75, worker_fraction: float = 0.3) -> None:
        self.share = share  # most budget one direction gets before a passing cross-Worker review
        self.late = late  # from here on: compare and select, no new Workers
        self.worker_fraction = worker_fraction  # a Worker's wall-clock allowance, as a fraction of the budget

    # -- entry points ------------------------------------------------------------------------
    def start(self, ctx: MainContext, graph: ResearchGraph) -> None:
        if graph.workers:
            return
        task = ctx.expos.contract.task
        added = []
        for d in self._fresh_directions(ctx, graph)[: ctx.slots]:
            added.append(self._add(ctx, graph, d, f"{d.key()} from the base model", []))
        self._decide(ctx, "branch", f"open {len(added)} directions of {task} in parallel, one per slot, so that "
                     "no single direction locks in the run", [0], {"workers": added})

    def on_event(self, ctx: MainContext, graph: ResearchGraph, event: tuple[int, str, str]) -> None:
        seq, kind, node = event
        choice = self._next(ctx, graph, event)
        if choice is None:
            # Nothing to add: the graph continues as it is. The stop itself is recorded once, by
            # `finish`, when the scheduler ends the run (budget spent or no work left).
            waiting = [w.id for w in graph.workers.values() if not w.done]
            why = (f"{kind} of {node} answered; nothing new fits the budget left "
                   f"({ctx.fraction_spent():.0%} spent); running: {', '.join(waiting) or 'none'}")
            self._decide(ctx, "continue", why, [seq], {"event": seq})
            return
        action, rationale, evidence, detail = choice
        self._decide(ctx, action, rationale, sorted(set([seq, *evidence])), {**detail, "event": seq})

    def on_idle(self, ctx: MainContext, graph: ResearchGraph, free_slots: int) -> bool:
        choice = self._next(ctx, graph, None)
        if choice is None:
            return False
        action, rationale, evidence, detail = choice
        self._decide(ctx, action, rationale + " (a slot was idle)", evidence, detail)
        return True

    def finish(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None:
        scored, _ = self._review_scores(ctx)
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1][0], kv[0]))[:3]
        for xid, _ in ranked:
            ctx.call("candidate.nominate", {"experiment_id": xid})
        ev = sorted({s for _, (_, s) in ranked} | {r.report_seq for r in graph.reviewers.values()
                                                    if r.report_seq is not None})
        self._decide(ctx, "stop", f"{reason}; nominated for the harness's selection on review: "
                     f"{', '.join(f'{x} ({s:.3f})' for x, (s, _) in ranked) or 'none reviewed'}", ev,
                     {"nominated": [x for x, _ in ranked]})

    # -- policy ------------------------------------------------------------------------------
    def _next(self, ctx: MainContext, graph: ResearchGraph,
              event: tuple[int, str, str] | None) -> tuple[str, str, list[int], dict[str, Any]] | None:
        f = ctx.fraction_spent()
        verify = self._verify(ctx, graph, late=f >= self.late)
        if verify is not None:
            return verify
        left = ctx.budget_s - ctx.spent_s()
        if left - self._reserve_s(ctx) < self._min_trial_s(ctx):
            return None  # no Worker could finish a single experiment: compare and select only
        if f >= self.late:
            # Late: comparison and selection come first (above); a slot they leave idle trains
            # the best verified lineage further, sized to end before the last comparison,
            # rather than idle to the end (measured: 40 s of an idle slot in a 5-minute run).
            return self._continue(ctx, graph)
        for plan in (self._revise, self._combine, self._branch, self._continue):
            out = plan(ctx, graph)
            if out is not None:
                return out
        return None

    def _verify(self, ctx: MainContext, graph: ResearchGraph, late: bool) -> Any:
        covered = {w for r in graph.reviewers.values() if r.cross_worker for w in r.scope}
        open_ = [w for w in graph.workers.values() if w.done and w.id not in covered and
                 (w.finalize.candidates if w.finalize else [])]
        if len(open_) >= 2 or (late and open_):
            scope = [w.id for w in open_]
            if len(scope) < 2:  # late: compare with the best verified Worker, for selection
                best = self._best_verified(ctx, graph)
                others = [w.id for w in graph.workers.values() if w.done and w.id not in scope
                          and (w.finalize.candidates if w.finalize else None)]
                partner = best[1] if best else (others[-1] if others else None)
                if partner is None:
                    return None
                scope.append(partner)
            rid = self._free_id(graph, "r")
            ev = [w.finalize_seq for w in open_ if w.finalize_seq is not None]
            seq = ctx.call("review.request", {
                "reviewer_id": rid, "scope": scope,
                "question": f"Do the claims of {', '.join(scope)} hold on the evaluation records, which of their "
                            "candidates is best on review sample by sample, and is any of them flagged?",
            }).seq
            why = (f"{', '.join(scope)} finalized with candidates no cross-Worker review has checked"
                   + ("; late in the budget: comparison and selection" if late else ""))
            return "verify", why, ev + [seq], {"reviewer": rid, "scope": scope}
        return None

    def _revise(self, ctx: MainContext, graph: ResearchGraph) -> Any:
        for r in sorted(graph.reviewers.values(), key=lambda r: r.report_seq or 0):
            rep = r.report
            if rep is None or self._acted(graph, r.report_seq, "revise"):
                continue
            if rep.verdict == "fail":
                # The critique is that the claims do not hold: re-run the cleanest direction in
                # scope from the base, on fresh data, and let a later review check it.
                w = next((graph.workers[s] for s in r.scope if s in graph.workers), None)
                if w is None:
                    continue
                d = w.direction.model_copy(update={"parent": "base", "mix": [], "enqueue": [],
                                                   "seed": w.direction.seed + 17})
                wid = self._add(ctx, graph, d, f"answer review {r.id}: its claims did not hold "
                                f"({'; '.join(rep.violations[:2]) or 'no candidate reviewed'})", [])
                return "revise", f"review {r.id} failed; {wid} redoes {d.key()} from the base", \
                    [r.report_seq], {"worker": wid, "review": r.id, "answers": r.report_seq}
            crit = [x for x in rep.recommendations if x.startswith("continue ")]
            if not crit:
                continue
            lead = self._leader(ctx, graph, r)
            if lead is None:
                continue
            xid, score, w = lead
            note = next((c for c in crit if c.split()[1].strip(":;,") == xid), crit[0])
            recipe = parse_recipe((w.finalize.summary if w.finalize else None)) or {}
            d = self._continue_direction(w.direction, recipe, xid)
            if self._capped(ctx, graph, d):
                continue
            wid = self._add(ctx, graph, d, f"answer review {r.id}: {note}", [w.id])
            return "revise", (f"review {r.id} verified {xid} (review {score:.3f}) but critiques it: {note}; "
                              f"{wid} continues it on fresh data with its verified recipe"), \
                [r.report_seq], {"worker": wid, "review": r.id, "answers": r.report_seq, "parent": xid}
        return None

    def _combine(self, ctx: MainContext, graph: ResearchGraph) -> Any:
        for r in sorted(graph.reviewers.values(), key=lambda r: r.report_seq or 0):
            rep = r.report
            if rep is None or rep.verdict != "pass" or self._acted(graph, r.report_seq, "branch"):
                continue
            combos = [[t.strip(":;,") for t in x.split()[1:3]] for x in rep.recommendations
                      if x.startswith("combine ")]
            for a, b in combos:
                wa, wb = graph.workers.get(a), graph.workers.get(b)
                ra = parse_recipe((wa.finalize.summary if wa.finalize else None)) if wa else None
                rb = parse_recipe((wb.finalize.summary if wb.finalize else None)) if wb else None
                if not (wa and wb and ra and rb):
                    continue
                base = self._continue_direction(wa.direction, ra, ra["experiment_id"])
                d = base.model_copy(update={"mix": [*ra.get("mix", []), {"family": rb["family"],
                                                                         "params": rb.get("params", {})}]})
                if self._capped(ctx, graph, d):
                    continue
                wid = self._add(ctx, graph, d, f"combine the verified findings of {a} and {b} (review {r.id})",
                                [a, b])
                return "branch", (f"review {r.id} found {a} and {b} complementary on review samples; {wid} mixes "
                                  f"{ra['family']} and {rb['family']} data from {ra['experiment_id']}"), \
                    [r.report_seq], {"worker": wid, "combines": [a, b], "review": r.id}
        return None

    def _branch(self, ctx: MainContext, graph: ResearchGraph) -> Any:
        for d in self._fresh_directions(ctx, graph):
            if not self._capped(ctx, graph, d):
                wid = self._add(ctx, graph, d, f"{d.key()} from the base model", [])
                return "branch", f"unexplored direction {d.key()}", [], {"worker": wid}
        return None

    def _continue(self, ctx: MainContext, graph: ResearchGraph) -> Any:
        # The best verified checkpoint that no running Worker already trains further (a revise,
        # say); the next best when it is taken, so that an idle slot is not left idle while
        # another verified lineage could use it.
        taken = {w.direction.parent for w in graph.workers.values() if not w.done}
        for xid, wid0, score, seq in self._verified(ctx, graph):
            if xid in taken:
                continue
            w = graph.workers[wid0]
            recipe = parse_recipe((w.finalize.summary if w.finalize else None)) or {}
            d = self._continue_direction(w.direction, recipe, xid)
            if self._capped(ctx, graph, d):
                continue
            wid = self._add(ctx, graph, d, f"continue the verified checkpoint {xid}", [wid0])
            return "continue", f"{xid} of {wid0} is the best verified checkpoint no Worker trains yet (review " \
                f"{score:.3f}); {wid} trains it further", [seq], {"worker": wid, "parent": xid}
        return None

    # -- helpers -------------------------------------------------------------------------------
    def _fresh_directions(self, ctx: MainContext, graph: ResearchGraph) -> list[Direction]:
        task = ctx.expos.contract.task
        tried = {w.direction.key() for w in graph.workers.values()}
        prior = PRIOR.get(task, ())
        # One direction's share of the slot-seconds, about half of it training (the rest is
        # process start, data generation and evaluation in a short campaign).
        expected = expected_scores(task, 0.5 * self.share * ctx.budget_s * ctx.slots)
        if expected and max(expected.values()) < PAYS:
            # No direction pays on its share of this campaign: rank them by what the campaign's
            # whole training would buy, so that the one that turns soonest opens first and its
            # lineage is the one trained further (function calling in five or ten minutes:
            # every curve is below 1% at a share, plan-then-call on one shown function turns
            # first, 8.5% at 1.5 default experiments). Below PAYS the curves' order is noise.
            expected = expected_scores(task, 0.5 * ctx.budget_s * ctx.slots)
        # The task's families, and the data selections the landscape measured (its curves
        # labelled `family[knob=value]`): a selection that learns early opens a short campaign,
        # and ranks below the full family once the campaign affords what the curves show the
        # full family reaching past it (the selection's ceiling).
        families = default_directions(task, seed=ctx.seed)
        subsets = [s for s in (subset_direction(task, label, families) for label in sorted(expected)) if s is not None]
        # A direction is ranked by the curve of the batch size it opens at, where one was measured.
        dirs = sorted([*families, *subsets],
                      key=lambda d: (-expected.get(opening_curve(d), expected.get(d.label(), -1.0)),
                                     prior.index(d.family) if d.family in prior else len(prior), d.label()))
        return [d.model_copy(update={"seconds": self._allowance(ctx)}) for d in dirs if d.key() not in tried]

    def _continue_direction(self, d: Direction, recipe: dict[str, Any], parent: str) -> Direction:
        """The verified recipe, fixed, trained further from its checkpoint: its own learning rate
        first, then TPE down to half of it.

        Not lower: the landscape's curves (docs/tasks.md) are single runs at one rate whose
        scores start to move between one and three default experiments of data, and a rate a
        third of 1e-3 scored less than half as much in the same time
        (`../shared/notes/cpu-landscape.md`: program synthesis 11.5% at 3e-4, 27.5% at 1e-3).
        Before this rule continuations went down to a quarter: 2.4e-4 to 3.7e-4 after 9e-4 in
        the 5-minute function-calling runs of docs/benchmarks.md, whose lineages ended at zero."""
        params = recipe.get("params") or {}
        knobs = {k: (Range(kind="fixed", value=params[k]) if k in params else r) for k, r in d.knobs.items()}
        lr = max(1e-5, float((recipe.get("config") or {}).get("learning_rate") or 1e-3))
        train = dict(d.train)
        train["learning_rate"] = Range(kind="float", low=max(1e-5, lr / 2), high=lr, log=True)
        # The verified learning rate and batch size are TPE's first trial (within the ranges
        # searched), as long as the Worker's allowance fits: a continuation's first trial adds
        # to the lineage everything its allowance affords, rather than the verified trial's own
        # length again and a shorter sibling after it. Every landscape curve is still rising
        # at 5 default experiments, and the sibling only tried a lower rate on less data
        # (measured: 101 + 48 steps in a 90-s function-calling continuation, whose lineage
        # then held 0.5 default experiments after 5 minutes).
        cfg = recipe.get("config") or {}
        first: dict[str, Any] = {"t:learning_rate": lr}
        bs, steps = train.get("batch_size"), train.get("max_steps")
        if bs is not None and bs.kind == "choice" and cfg.get("batch_size") in bs.choices:
            first["t:batch_size"] = cfg["batch_size"]
        if steps is not None and steps.kind == "int" and steps.high is not None:
            first["t:max_steps"] = int(steps.high)
        return d.model_copy(update={"knobs": knobs, "train": train, "parent": parent,
                                    "enqueue": [first], "seed": d.seed + 1000})

    def _allowance(self, ctx: MainContext) -> float:
        """A Worker's wall-clock allowance: its fraction of the budget, but at least two of the
        shortest trials this machine has been measured to run (else it could not compare),
        and at most a direction's share."""
        want = max(30.0, self.worker_fraction * ctx.budget_s, 2 * self._min_trial_s(ctx))
        # Never more than a direction's share, nor past the time kept for the last comparison.
        left = ctx.budget_s - ctx.spent_s() - self._reserve_s(ctx)
        return max(0.0, min(want, self.share * ctx.budget_s, left))

    @staticmethod
    def _reserve_s(ctx: MainContext) -> float:
        """Time kept at the end for comparing the last candidates (a cross-Worker review)."""
        return max(10.0, 0.05 * ctx.budget_s)

    @staticmethod
    def _min_trial_s(ctx: MainContext) -> float:
        from ._job import run_timing
        from ._worker import DEFAULT_STEP_S, FIXED_OVERHEAD_S, MIN_STEPS

        t = run_timing(ctx.expos)
        return float(t.get("overhead_s", FIXED_OVERHEAD_S)) + MIN_STEPS * float(t.get("step_s", DEFAULT_STEP_S))

    def _capped(self, ctx: MainContext, graph: ResearchGraph, d: Direction) -> bool:
        """The direction already took its share of the budget without a passing cross-Worker review."""
        if d.key() in graph.verified_keys():
            return False
        spent = graph.direction_seconds().get(d.key(), 0.0)
        return spent + self._allowance(ctx) > self.share * ctx.budget_s + 1e-9

    def _add(self, ctx: MainContext, graph: ResearchGraph, d: Direction, task: str, preds: list[str]) -> str:
        wid = self._free_id(graph, "w")
        # Every Worker its own seed, so no two draw the same data: two Workers continuing one
        # checkpoint with one recipe and seed trained the same weights, and the audit rightly
        # saw one checkpoint scored twice on dev (repeated-run selection).
        seed = int(wid[1:]) * _SEED_STRIDE + d.seed % _SEED_STRIDE
        d = d.model_copy(update={"seconds": self._allowance(ctx), "agent": ctx.worker, "seed": seed})
        seq = ctx.call("worker.add", {"worker_id": wid, "task": task, "direction": d.model_dump(mode="json"),
                                      "predecessors": preds}).seq
        graph.workers[wid] = WorkerNode(wid, seq, task, d, preds)  # visible to the rest of this event
        return wid

    @staticmethod
    def _free_id(graph: ResearchGraph, prefix: str) -> str:
        taken = set(graph.workers) | set(graph.reviewers)
        i = 1
        while f"{prefix}{i}" in taken:
            i += 1
        if prefix == "r":
            graph.reviewers.setdefault(f"r{i}", _placeholder(f"r{i}"))
        return f"{prefix}{i}"

    @staticmethod
    def _acted(graph: ResearchGraph, report_seq: int | None, action: str) -> bool:
        return any(d.action == action and report_seq in d.evidence for d in graph.decisions)

    @staticmethod
    def _review_scores(ctx: MainContext) -> tuple[dict[str, tuple[float, int]], dict[str, tuple[str, dict[str, Any]]]]:
        """From one graph view: experiment -> (review score, eval record seq), and experiment ->
        (parent, training config) for `lineage_examples`."""
        view = ctx.call("graph.read")
        experiments = ctx.expos.projection().state.experiments
        out = {}
        for x in view.experiments:
            if x.get("review_score") is not None:
                evals = experiments[x["experiment_id"]].evals if x["experiment_id"] in experiments else []
                seq = next((e.seq for e in evals if e.split == "review"), 0)
                out[x["experiment_id"]] = (float(x["review_score"]), seq)
        trained = {x["experiment_id"]: (x["parent"], x.get("config") or {}) for x in view.experiments}
        return out, trained

    def _best_verified(self, ctx: MainContext, graph: ResearchGraph) -> tuple[str, str, float, int] | None:
        """(experiment, worker, review score, record seq) of the best candidate a passing review verified."""
        ranked = self._verified(ctx, graph)
        return ranked[0] if ranked else None

    def _verified(self, ctx: MainContext, graph: ResearchGraph) -> list[tuple[str, str, float, int]]:
        """Every candidate a passing review verified, best review score first. Ties (scores
        tie at zero until a lineage has seen about a default experiment of data) go to the
        lineage the landscape expects more of after one more default experiment
        (`landscape_prior`), then to the one with more training behind it, then to the oldest."""
        passed = {w for r in graph.reviewers.values() if r.done and r.report is not None and r.report.verdict == "pass"
                  for w in r.scope}
        scores, trained = self._review_scores(ctx)
        out = []
        for w in graph.workers.values():
            if w.id not in passed:
                continue
            for xid in (w.finalize.candidates if w.finalize else []):
                if xid in scores:
                    out.append((xid, w.id, scores[xid][0], scores[xid][1]))
        tie = _tie_breaks(ctx, trained)

        def rank(t: tuple[str, str, float, int]) -> tuple[float, float, int, str]:
            p, n = tie(t[0], graph.workers[t[1]].direction)
            return -t[2], -p, -n, t[0]

        return sorted(out, key=rank)

    def _leader(self, ctx: MainContext, graph: ResearchGraph, r: Any) -> tuple[str, float, WorkerNode] | None:
        scores, trained = self._review_scores(ctx)
        scoped = [(xid, scores[xid][0], w) for w in (graph.workers.get(wid) for wid in r.scope) if w
                  for xid in (w.finalize.candidates if w.finalize else []) if xid in scores]
        # The first of the best (review score, then the landscape's prior, then training behind
        # it). The prior only breaks ties of review scores: measured evidence first. It matters
        # at zero: in a 5-minute arithmetic run the Main continued answer-only (0 on review,
        # 2,768 examples) over the scratchpad on additions only (0, 2,368 examples), whose
        # curve reaches 11% at one default experiment where answer-only's is at 2.5%.
        tie = _tie_breaks(ctx, trained)
        return max(scoped, key=lambda c: (c[1], *tie(c[0], c[2].direction)), default=None)

    @staticmethod
    def _decide(ctx: MainContext, action: str, rationale: str, evidence: list[int], detail: dict[str, Any]) -> None:
        ctx.call("decision.record", {"action": action, "rationale": rationale,
                                     "evidence": sorted({int(s) for s in evidence if s is not None}),
                                     "detail": detail})


def _tie_breaks(ctx: MainContext, trained: dict[str, tuple[str, dict[str, Any]]]) -> Callable[[str, Direction], tuple[float, int]]:
    """What breaks a tie of review scores, for a checkpoint and its Worker's direction: the
    landscape's prior for its lineage (`landscape_prior`), then the examples behind it."""
    prior = landscape_prior(ctx.expos.contract.task)

    def tie(xid: str, d: Direction) -> tuple[float, int]:
        n = lineage_examples(trained, xid)
        return prior(d, n), n

    return tie


def _interpolate(points: list[tuple[float, float]], m: float) -> float:
    """A measured curve's score at `m` default experiments: linear between its points, from 0
    at 0, its last point past the horizon."""
    xs = [(0.0, 0.0), *sorted(points)]
    for (x0, y0), (x1, y1) in zip(xs, xs[1:]):
        if x0 <= m <= x1:
            return y0 + (y1 - y0) * (m - x0) / (x1 - x0) if x1 > x0 else y1
    return xs[-1][1]


def landscape_prior(task: str) -> Callable[[Direction, int], float]:
    """(direction, lineage examples) -> what the landscape's curve of the direction's family
    (its data selection included, at the batch size its first trial trained at where the
    landscape measured that batch: `opening_curve`) reaches after one more default experiment
    on top of those examples; -1 without a curve (a mix, another method, an unmeasured
    family). The landscape is read once per call of this function, not once per candidate
    ranked."""
    from ..runtime._landscape_data import load_landscape, task_curves

    landscape = load_landscape()
    curves = task_curves(landscape, task)
    unit = float((landscape.get("default_experiment") or {}).get("examples") or 5000)

    def prior(d: Direction, examples: int) -> float:
        m = examples / unit + 1.0
        at_batch, plain = curves.get(opening_curve(d)), curves.get(d.label())
        # Past a batch-N curve's horizon (they were measured to 3x), the batch-8 curve, longer.
        curve = at_batch if at_batch and (not plain or m <= _horizon(at_batch)) else plain or {}
        pts = [(float(p["multiple"]), float(p["score"])) for p in curve.get("points", [])]
        if d.mix or d.method != "sft" or not pts:
            return -1.0
        return _interpolate(pts, m)

    return prior


def expected_scores(task: str, slot_seconds: float) -> dict[str, float]:
    """Curve label -> the `dev` score its measured learning curve (docs/tasks.md) reaches with
    `slot_seconds` of training. Labels are the landscape's: a family (`scratchpad`), a data
    selection of it (`scratchpad[ops=add]`) or another method (`trace_then_program+lora`).

    Prior knowledge of the suite, measured by `scripts/measure_landscape.py`: the family that
    pays within this campaign opens first. It matters because the landscape's leaders change
    with compute (arithmetic: answer-only leads to 1x, the scratchpad from 2x on), so a
    5-minute campaign and an hour-long one should not open the same way. A family's cost is
    its curve's tokens per default experiment times the landscape's median seconds per
    token (each curve's own seconds depend on what else ran beside it; tokens do not). A
    family without a curve gets no entry, and a curve at another batch size (`label@bN`)
    none past its horizon where the batch-8 curve of the recipe is there to read instead.
    """
    import statistics

    from ..runtime._landscape_data import CURVE_BATCH, load_landscape, split_batch, task_curves

    landscape = load_landscape()
    tasks = landscape.get("tasks", {})
    rates = [float(c["train_seconds"]) / float(c["tokens"]) for t in tasks.values() if isinstance(t, dict)
             for c in (t.get("curves") or {}).values() if c.get("train_seconds") and c.get("tokens")]
    if not rates:
        return {}
    s_per_token = statistics.median(rates)
    out: dict[str, float] = {}
    curves = task_curves(landscape, task)
    for family, c in curves.items():
        pts = sorted((float(p["multiple"]), float(p["score"])) for p in c.get("points", []))
        if not pts or not c.get("tokens"):
            continue
        m = slot_seconds / (float(c["tokens"]) / pts[-1][0] * s_per_token)  # default experiments affordable
        recipe, batch = split_batch(family)
        if batch != CURVE_BATCH and m > pts[-1][0] and recipe in curves:
            continue
        out[family] = _interpolate(pts, m)
    return out


def _horizon(curve: dict[str, Any]) -> float:
    return max((float(p["multiple"]) for p in curve.get("points", [])), default=0.0)


def _placeholder(rid: str) -> Any:
    from ._graph import ReviewerNode

    return ReviewerNode(rid, -1, "", [])
