"""Main agents of the bench's configurations.

The full system uses the orchestra's policy Main as it is (the run's Worker agent, named
in its settings, is the bench's `ShortcutWorker`). `NoReviewMain` is the same policy
without Reviewers: it decides from the Workers' own summaries (their claimed `dev`
scores). `SingleMain` starts one Worker on the first direction the policy Main would open,
for the whole budget, and adds nothing (the linear, autoresearch-style loop: no Main
decisions to speak of and no Reviewer). `SearchMain` starts one search Worker per slot
(Optuna TPE or random search over the union of every recipe knob) for the whole budget.
"""

from __future__ import annotations

from typing import Any

from ..orchestra import Direction, MainContext, PolicyMain, ResearchGraph, WorkerNode, main_agent

__all__ = ["MainPickMain", "NoReviewMain", "SearchMain", "SingleMain"]

# A Worker that owns the whole budget stops on its deadline, not on a trial count.
UNBOUNDED_TRIALS = 10_000


@main_agent("no-review")
class NoReviewMain(PolicyMain):
    """The policy without Reviewers: 'verified' means 'claimed in a Worker's summary'."""

    def _verify(self, ctx: MainContext, graph: ResearchGraph, late: bool) -> Any:
        return None

    def _claims(self, graph: ResearchGraph) -> dict[str, tuple[float, str, int]]:
        """Experiment -> (claimed dev score, Worker, finalize seq)."""
        out = {}
        for w in graph.workers.values():
            for c in w.finalize.claims if w.finalize else []:
                out[c.experiment_id] = (c.score, w.id, w.finalize_seq or 0)
        return out

    def _verified(self, ctx: MainContext, graph: ResearchGraph) -> list[tuple[str, str, float, int]]:
        """Every claimed candidate, best claimed dev score first: the claim stands in for the
        review, so the Main continues, combines and ranks claimed checkpoints as the full
        system does verified ones (without this the ablation never trained a checkpoint further,
        a handicap beyond the missing Reviewer)."""
        return sorted(
            ((xid, wid, score, seq) for xid, (score, wid, seq) in self._claims(graph).items()),
            key=lambda t: (-t[2], t[0]),
        )

    def _best_verified(self, ctx: MainContext, graph: ResearchGraph) -> tuple[str, str, float, int] | None:
        claims = self._claims(graph)
        if not claims:
            return None
        xid, (score, wid, seq) = max(claims.items(), key=lambda kv: (kv[1][0], kv[0]))
        return xid, wid, score, seq

    def _capped(self, ctx: MainContext, graph: ResearchGraph, d: Direction) -> bool:
        claimed = {graph.workers[w].direction.key() for _, w, _ in self._claims(graph).values()}
        if d.key() in claimed:
            return False  # the claim stands in for the review this Main never asks for
        return super()._capped(ctx, graph, d)

    def finish(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None:
        ranked = sorted(self._claims(graph).items(), key=lambda kv: (-kv[1][0], kv[0]))[:3]
        for xid, _ in ranked:
            ctx.call("candidate.nominate", {"experiment_id": xid})
        self._decide(
            ctx,
            "stop",
            f"{reason}; nominated by claimed dev score: "
            f"{', '.join(f'{x} ({s:.3f})' for x, (s, _, _) in ranked) or 'none claimed'}",
            sorted({seq for _, (_, _, seq) in ranked}),
            {"nominated": [x for x, _ in ranked]},
        )


@main_agent("main-pick")
class MainPickMain(NoReviewMain):
    """No Reviewer, and the Main picks the returned checkpoint (the RSI-Master paper's setting):
    the candidate of the Worker whose claimed `dev` score is highest. It nominates every Worker's
    candidate in the order of their claims, so that the simulated bench (`bench._simrecord`)
    returns the first nomination the audit does not flag, instead of the harness's re-selection
    on `review`: a claim that is not its candidate's record costs what it costs, and a guarded
    configuration never returns a checkpoint the audit flagged (the Main's pick alone returned
    flagged merge and format hacks in a quarter of the `agents` campaigns)."""

    def finish(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None:
        ranked = sorted(
            (
                (c.score, w.id, w.finalize.candidates[0], w.finalize_seq or 0)
                for w in graph.workers.values()
                if w.finalize and w.finalize.candidates
                for c in w.finalize.claims[:1]
            ),
            key=lambda t: (-t[0], t[2]),
        )
        for _, _, xid, _ in ranked:
            ctx.call("candidate.nominate", {"experiment_id": xid})
        pick = ranked[0] if ranked else None
        self._decide(
            ctx,
            "stop",
            f"{reason}; the Main's pick: "
            + (f"{pick[2]}, candidate of {pick[1]}, who claims {pick[0]:.3f}" if pick else "none claimed")
            + (f"; then, in claim order: {', '.join(x for _, _, x, _ in ranked[1:])}" if len(ranked) > 1 else ""),
            sorted({t[3] for t in ranked}),
            {"nominated": [t[2] for t in ranked], "pick": pick[2] if pick else None},
        )


class _OneShotMain:
    """Starts its Workers (the run's Worker agent) once, answers every event with
    `continue`, adds nothing."""

    def _directions(self, ctx: MainContext) -> list[Direction]:
        raise NotImplementedError

    def start(self, ctx: MainContext, graph: ResearchGraph) -> None:
        if graph.workers:
            return
        added = []
        for i, d in enumerate(self._directions(ctx)):
            wid = f"w{i + 1}"
            d = d.model_copy(update={"agent": ctx.worker, "seconds": ctx.budget_s, "trials": UNBOUNDED_TRIALS})
            seq = ctx.call(
                "worker.add",
                {
                    "worker_id": wid,
                    "task": f"{d.key()} for the whole budget",
                    "direction": d.model_dump(mode="json"),
                    "predecessors": [],
                },
            ).seq
            graph.workers[wid] = WorkerNode(wid, seq, d.key(), d, [])
            added.append(wid)
        ctx.call(
            "decision.record",
            {
                "action": "branch",
                "rationale": f"{type(self).__name__}: start {', '.join(added)} for the whole budget",
                "evidence": [0],
                "detail": {"workers": added},
            },
        )

    def on_event(self, ctx: MainContext, graph: ResearchGraph, event: tuple[int, str, str]) -> None:
        ctx.call(
            "decision.record",
            {
                "action": "continue",
                "rationale": "nothing is added after the start",
                "evidence": [event[0]],
                "detail": {"event": event[0]},
            },
        )

    def on_idle(self, ctx: MainContext, graph: ResearchGraph, free_slots: int) -> bool:
        return False

    def finish(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None:
        ctx.call("decision.record", {"action": "stop", "rationale": reason, "evidence": [], "detail": {}})


@main_agent("single")
class SingleMain(_OneShotMain):
    """One Worker, the first direction the policy Main would open, the whole budget."""

    def _directions(self, ctx: MainContext) -> list[Direction]:
        return PolicyMain()._fresh_directions(ctx, ResearchGraph())[:1]


@main_agent("search")
class SearchMain(_OneShotMain):
    """One search Worker per slot, each with its own seed (independent studies)."""

    def _directions(self, ctx: MainContext) -> list[Direction]:
        first = PolicyMain()._fresh_directions(ctx, ResearchGraph())[0]
        return [first.model_copy(update={"seed": first.seed + 31 * i}) for i in range(ctx.slots)]
