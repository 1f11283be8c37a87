"""Main agents of the bench's configurations.

The full system uses the orchestra's policy Main as it is (the run's Worker agent, named
in its settings, is the bench's `ShortcutWorker`). `no-review` is the same policy
configured without Reviewers: it decides from the Workers' own summaries (their claimed `dev`
scores); `main-pick` also returns the Main's own pick. `single` starts one Worker on the first
direction the policy Main would open, for the whole budget, and adds nothing (the linear,
autoresearch-style loop: no Main decisions to speak of and no Reviewer). `search` starts one search Worker per slot (Optuna TPE
or random search over the union of every recipe knob) for the whole budget. Both are
configurations of `OneShotMain`: which directions it starts.
"""

from __future__ import annotations

from collections.abc import Callable

from ..orchestra import (
    ClaimsNomination,
    ClaimsVerifier,
    Direction,
    MainContext,
    MainPick,
    OrchestraEvent,
    PolicyMain,
    ResearchGraph,
    WorkerNode,
    main_agent,
)

__all__ = [
    "OneShotMain",
    "first_opening",
    "main_pick_main",
    "no_review_main",
    "one_search_per_slot",
    "search_main",
    "single_main",
]

# A Worker that owns the whole budget stops on its deadline, not on a trial count.
UNBOUNDED_TRIALS = 10_000


@main_agent("no-review")
def no_review_main() -> PolicyMain:
    """The policy without Reviewers: 'verified' means 'claimed in a Worker's summary', and the
    best claims are nominated."""
    return PolicyMain(verifier=ClaimsVerifier(), nomination=ClaimsNomination())


@main_agent("main-pick")
def main_pick_main() -> PolicyMain:
    """No Reviewer, and the Main picks the returned checkpoint (the RSI-Master paper's setting):
    every Worker's candidate nominated in the order of their claims (`MainPick`)."""
    return PolicyMain(verifier=ClaimsVerifier(), nomination=MainPick())


class OneShotMain:
    """Starts its Workers (the run's Worker agent, `directions` of the run) once, for the whole
    budget, answers every event with `continue`, adds nothing. `name` is how its decisions name it."""

    def __init__(self, name: str, directions: Callable[[MainContext], list[Direction]]) -> None:
        self.name = name
        self.directions = directions

    def start(self, ctx: MainContext, graph: ResearchGraph) -> None:
        if graph.workers:
            return
        added = []
        for i, d in enumerate(self.directions(ctx)):
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
                "rationale": f"{self.name}: start {', '.join(added)} for the whole budget",
                "evidence": [0],
                "detail": {"workers": added},
            },
        )

    def on_event(self, ctx: MainContext, graph: ResearchGraph, event: OrchestraEvent) -> None:
        ctx.call(
            "decision.record",
            {
                "action": "continue",
                "rationale": "nothing is added after the start",
                "evidence": [event[0]],
                "detail": {},
                "answers": event[0],
            },
        )

    def on_idle(self, ctx: MainContext, graph: ResearchGraph, free_slots: int) -> bool:
        return False

    def finish(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None:
        ctx.call("decision.record", {"action": "stop", "rationale": reason, "evidence": [], "detail": {}})


def first_opening(ctx: MainContext) -> list[Direction]:
    """The first direction the policy Main would open."""
    return PolicyMain().openings(ctx, ResearchGraph())[:1]


def one_search_per_slot(ctx: MainContext) -> list[Direction]:
    """The policy Main's first direction once per slot, each with its own seed (independent studies)."""
    first = PolicyMain().openings(ctx, ResearchGraph())[0]
    return [first.model_copy(update={"seed": first.seed + 31 * i}) for i in range(ctx.slots)]


@main_agent("single")
def single_main() -> OneShotMain:
    """One Worker, the first direction the policy Main would open, the whole budget."""
    return OneShotMain("SingleMain", first_opening)


@main_agent("search")
def search_main() -> OneShotMain:
    """One search Worker per slot, each with its own seed."""
    return OneShotMain("SearchMain", one_search_per_slot)
