"""Population-based training (PBT) as a Main policy over ExpOS Workers.

Jaderberg et al., "Population Based Training of Neural Networks" (2017), asynchronous form:
a population of members trains in intervals; whenever a member is *ready* (it finished an
interval (`_interval`: about `GENERATIONS` per member over the budget) and its `dev` score is known), it is ranked against the
population's latest scores. **Exploit** by truncation selection: a member in the bottom
`QUANTILE` copies the checkpoint and hyperparameters of a member drawn uniformly from the top
`QUANTILE`. **Explore** by perturbation: each numeric hyperparameter of the copied recipe
(learning rate, numeric data knobs) is multiplied by 0.8 or 1.2 (the paper's "perturb"), and
each hyperparameter (numeric or categorical, batch size included) is instead resampled from
its range with probability `RESAMPLE`. A member not in the bottom quantile continues from its
own checkpoint with its own recipe. The constants follow Syne Tune's `PopulationBasedTraining`
defaults (quantile_fraction 0.25, resample_probability 0.25), the paper's truncation selection
used 20%.

Each interval is one Worker (the run's Worker agent, as in every configuration) on a
direction whose every parameter is fixed: one experiment of `INTERVAL_STEPS` steps from the
member's (or the copied member's) checkpoint. Copying a checkpoint goes through ExpOS's
lineage rule: the new Worker names the copied member's last Worker as its predecessor, so the
checkpoint is in its lineage (otherwise ExpOS refuses it as weight provenance). Members are
named in Worker ids (`p<member>-g<interval>`), so the policy rebuilds its state from the
research graph at every event and a resumed run continues where it was.

The population is `POP_PER_SLOT` members per slot: members queue for slots, so every slot
stays busy while others are being ranked.
"""

from __future__ import annotations

import math
import random
import re
from typing import Any

from ..orchestra import (
    Direction,
    MainContext,
    OrchestraEvent,
    Range,
    ResearchGraph,
    WorkerNode,
    default_directions,
    main_agent,
    run_timing,
)
from ._workers import train_ranges

__all__ = ["PBTMain", "perturb"]

INTERVAL_STEPS = 200  # a member's first interval, before the run has measured a step
QUANTILE = 0.25
RESAMPLE = 0.25
FACTORS = (0.8, 1.2)
POP_PER_SLOT = 2
GENERATIONS = 16  # intervals per member over the budget (once the run has measured a step)
_ID = re.compile(r"^p(\d+)-g(\d+)$")


def _sample(r: Range, rng: random.Random) -> Any:
    if r.kind == "fixed":
        return r.value
    if r.kind == "choice":
        return rng.choice(list(r.choices))
    lo, hi = float(r.low), float(r.high)  # type: ignore[arg-type]
    if r.kind == "int":
        return rng.randint(int(lo), int(hi))
    if r.log:
        return math.exp(rng.uniform(math.log(lo), math.log(hi)))
    return rng.uniform(lo, hi)


def perturb(value: Any, r: Range, rng: random.Random) -> Any:
    """PBT's explore for one hyperparameter: resample with probability RESAMPLE, else multiply a
    numeric value by 0.8 or 1.2 (clipped to its range); a categorical value is kept."""
    if r.kind == "fixed":
        return r.value
    if rng.random() < RESAMPLE:
        return _sample(r, rng)
    if r.kind == "choice":
        return value
    v = float(value) * rng.choice(FACTORS)
    v = min(max(v, float(r.low)), float(r.high))  # type: ignore[arg-type]
    return round(v) if r.kind == "int" else v


@main_agent("pbt")
class PBTMain:
    """Asynchronous PBT over the union of the task's directions (see the module docstring)."""

    def _union(self, ctx: MainContext) -> dict[str, Direction]:
        if not hasattr(self, "_dirs"):
            self._dirs = {d.family: d for d in default_directions(ctx.expos.task)}
        return self._dirs

    def _train_space(self, ctx: MainContext) -> dict[str, Range]:
        """The training ranges the task's directions search, less the step count (the interval's)."""
        return {k: r for k, r in train_ranges(self._union(ctx)).items() if k != "max_steps"}

    def _interval(self, ctx: MainContext) -> int:
        """Steps per interval: about `GENERATIONS` intervals per member over the budget, from this
        run's measured seconds per step and per trial (`run_timing`); `INTERVAL_STEPS` until a
        step has been measured. Within the step range the directions search. A fixed step count
        made a 10-hour simulated campaign 650+ one-experiment Workers (13 min of wall time)."""

        r = train_ranges(self._union(ctx)).get("max_steps")
        lo, hi = (1, 10**9) if r is None or r.kind != "int" else (int(r.low or 1), int(r.high or 10**9))
        t = run_timing(ctx.expos.reader)
        steps: float = INTERVAL_STEPS
        if t.get("step_s"):
            members = max(2, POP_PER_SLOT * ctx.slots)
            interval_s = ctx.budget_s * ctx.slots / (members * GENERATIONS)
            steps = (interval_s - float(t.get("overhead_s", 0.0))) / float(t["step_s"])
        return int(min(max(steps, lo), hi))

    # -- the population, read from the graph ------------------------------------------------
    @staticmethod
    def _members(graph: ResearchGraph) -> dict[int, list[WorkerNode]]:
        out: dict[int, list[WorkerNode]] = {}
        for w in graph.workers.values():
            m = _ID.match(w.id)
            if m:
                out.setdefault(int(m.group(1)), []).append(w)
        for ws in out.values():
            ws.sort(key=lambda w: int(_ID.match(w.id).group(2)))  # type: ignore[union-attr]
        return out

    @staticmethod
    def _score(w: WorkerNode) -> tuple[float, str] | None:
        """(claimed dev score, experiment) of a finished interval, None when it trained nothing."""
        claims = w.finalize.claims if w.finalize else []
        return (float(claims[0].score), claims[0].experiment_id) if claims else None

    def _latest(self, members: dict[int, list[WorkerNode]]) -> dict[int, tuple[WorkerNode, tuple[float, str] | None]]:
        """Each member's last finished interval with its score (the score of the last interval
        that trained something, so a refused interval does not reset a member)."""
        out = {}
        for m, ws in members.items():
            done = [w for w in ws if w.done]
            if done:
                scored = [w for w in done if self._score(w) is not None]
                last = scored[-1] if scored else done[-1]
                out[m] = (last, self._score(last))
        return out

    # -- agent protocol ------------------------------------------------------------------------
    def start(self, ctx: MainContext, graph: ResearchGraph) -> None:
        if graph.workers:
            return
        dirs = self._union(ctx)
        added = []
        for m in range(max(2, POP_PER_SLOT * ctx.slots)):
            rng = random.Random(ctx.seed * 1_000 + m)
            fam = sorted(dirs)[rng.randrange(len(dirs))]
            knobs = {k: _sample(r, rng) for k, r in dirs[fam].knobs.items()}
            train = {k: _sample(r, rng) for k, r in self._train_space(ctx).items()}
            added.append(self._add(ctx, graph, m, 1, fam, knobs, train, "base", []))
        self._decide(ctx, "branch", f"PBT: population of {len(added)} members from random recipes", [0], added)

    def on_event(self, ctx: MainContext, graph: ResearchGraph, event: OrchestraEvent) -> None:
        seq, _kind, node = event
        m = _ID.match(node)
        if m is None or ctx.fraction_spent() >= 1.0:
            self._decide(ctx, "continue", "not a population member, or the budget is spent", [seq], [], seq)
            return
        member = int(m.group(1))
        note, wid = self._next(ctx, graph, member)
        self._decide(ctx, "continue" if wid is None else "branch", note, [seq], [wid] if wid else [], seq)

    def on_idle(self, ctx: MainContext, graph: ResearchGraph, free_slots: int) -> bool:
        """A member whose interval ended without a next one queued (a resumed run) gets it."""
        members = self._members(graph)
        idle = [m for m, ws in sorted(members.items()) if all(w.done for w in ws)]
        added = []
        for member in idle[:free_slots]:
            _note, wid = self._next(ctx, graph, member)
            if wid:
                added.append(wid)
        if added:
            self._decide(ctx, "branch", "PBT: next intervals of idle members", [], added)
        return bool(added)

    def finish(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None:
        self._decide(ctx, "stop", reason, [], [])

    # -- exploit and explore -------------------------------------------------------------------
    def _next(self, ctx: MainContext, graph: ResearchGraph, member: int) -> tuple[str, str | None]:
        members = self._members(graph)
        ws = members.get(member, [])
        if not ws or not ws[-1].done:
            return f"p{member} has an interval queued", None
        latest = self._latest(members)
        ranked = sorted(((s[0], m) for m, (_w, s) in latest.items() if s is not None), key=lambda t: (-t[0], t[1]))
        k = max(1, math.floor(len(ranked) * QUANTILE)) if len(ranked) >= 2 else 0
        top = [m for _, m in ranked[:k]]
        bottom = {m for _, m in ranked[len(ranked) - k :]} if k else set()
        gen = int(_ID.match(ws[-1].id).group(2)) + 1  # type: ignore[union-attr]
        rng = random.Random(ctx.seed * 1_000_003 + member * 1_009 + gen)
        own_w, own = latest[member]
        # A tie is no evidence (early on every member may score 0): only a better member is copied.
        better = [m for m in top if m != member and own is not None and latest[m][1][0] > own[0]]  # type: ignore[index]
        if member in bottom and better:
            src = better[rng.randrange(len(better))]
            src_w, src_score = latest[src]
            assert src_score is not None
            d = src_w.direction
            fam_knobs = self._union(ctx)[d.family].knobs
            knobs = {k: perturb(r.value, fam_knobs.get(k, r), rng) for k, r in d.knobs.items()}
            train = {k: perturb(d.train[k].value, r, rng) for k, r in self._train_space(ctx).items() if k in d.train}
            wid = self._add(ctx, graph, member, gen, d.family, knobs, train, src_score[1], [src_w.id])
            return (
                f"PBT exploit: p{member} (dev {own[0] if own else float('nan'):.3f}) in the bottom {QUANTILE:.0%}, "
                f"copies p{src} ({src_score[1]}, dev {src_score[0]:.3f}) and perturbs its recipe",
                wid,
            )
        d = own_w.direction
        parent = own[1] if own else d.parent
        knobs = {k: r.value for k, r in d.knobs.items()}
        train = {k: r.value for k, r in d.train.items() if k != "max_steps"}
        wid = self._add(ctx, graph, member, gen, d.family, knobs, train, parent, [own_w.id])
        return f"PBT: p{member} continues from {parent} with its recipe", wid

    def _add(
        self,
        ctx: MainContext,
        graph: ResearchGraph,
        member: int,
        gen: int,
        family: str,
        knobs: dict[str, Any],
        train: dict[str, Any],
        parent: str,
        preds: list[str],
    ) -> str:
        wid = f"p{member}-g{gen}"
        base = self._union(ctx)[family]
        fixed = {k: Range(kind="fixed", value=v) for k, v in train.items()}
        fixed["max_steps"] = Range(kind="fixed", value=self._interval(ctx))
        d = Direction(
            agent=ctx.worker,
            family=family,
            method=base.method,
            knobs={k: Range(kind="fixed", value=v) for k, v in knobs.items()},
            train=fixed,
            parent=parent,
            trials=1,
            seconds=max(1.0, ctx.budget_s - ctx.spent_s()),
            seed=member,
        )
        seq = ctx.call(
            "worker.add",
            {
                "worker_id": wid,
                "task": f"PBT member {member}, interval {gen}: {family} from {parent}",
                "direction": d.model_dump(mode="json"),
                "predecessors": preds,
            },
        ).seq
        graph.workers[wid] = WorkerNode(wid, seq, d.key(), d, preds)
        return wid

    @staticmethod
    def _decide(
        ctx: MainContext,
        action: str,
        rationale: str,
        evidence: list[int],
        workers: list[str],
        event: int | None = None,
    ) -> None:
        args: dict[str, Any] = {
            "action": action,
            "rationale": rationale,
            "evidence": evidence,
            "detail": {"workers": workers},
        }
        if event is not None:
            args["answers"] = event
        ctx.call("decision.record", args)
