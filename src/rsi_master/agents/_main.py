"""The LLM-backed Main agent: one bounded agent loop per orchestration event, over the
Main tools, ended by `decision.record`.

Each turn starts afresh from the ledger (the event, the graph view, the latest
decisions), so the Main needs no state of its own and a resumed run continues as it
would have. The harness adds what is its own fact rather than the model's: which event
a decision answers (`detail.event`), and the rest of a Worker's direction (the task's
default ranges for the chosen family, the run's Worker agent, a time allowance). A turn
that ends without a decision gets one recorded by the harness that says so, so that the
event counts as answered and the run goes on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from .. import _clock
from ..expos import ToolInvalid, tools_for
from ..orchestra import (
    Direction,
    Guidance,
    MainContext,
    OrchestraEvent,
    Range,
    ResearchGraph,
    default_directions,
    grpo_batch_problem,
    main_agent,
    within_ranges,
)
from ._loop import AgentLoop, Outcome
from ._memory import brief_block, clip
from ._providers import make_model
from ._setup import recorded_role

__all__ = ["LLMMain", "MainBrief", "RecentDecision"]

SHARE = 0.4  # most of the budget one Worker's allowance may take (as the programmatic Main)
ADDS = ("worker.add", "review.request")


@dataclass(frozen=True)
class RecentDecision:
    """One of the Main's latest decisions, as its brief quotes it."""

    seq: int
    action: str
    rationale: str  # clipped


@dataclass(frozen=True)
class MainBrief:
    """What the LLM Main reads at the top of a turn, beside the research graph's view: the event
    the turn answers (or the turn's own name: start, idle, finish, guidance), the task and the
    families it offers, the run's Worker agent, slots and budget, and its latest decisions."""

    event: OrchestraEvent | None
    tag: str  # the turn's name, shown where there is no event
    task: str
    capability: str
    families: dict[str, list[str]]  # family -> training methods it offers, its usual one first
    worker_agent: str
    slots: int
    budget_s: float
    spent_s: float
    fraction_spent: float
    reviewed: list[str]  # experiments with a review score, best first
    recent_decisions: list[RecentDecision]

    def as_json(self) -> dict[str, Any]:
        """The brief as the model reads it (a JSON block; the fake model's `${brief...}` paths)."""
        e = self.event  # an OrchestraEvent, or a plain (seq, kind, node) from a resumed run's graph
        return {
            "event": {"seq": e[0], "kind": e[1], "node": e[2]} if e is not None else {"kind": self.tag},
            "task": self.task,
            "capability": self.capability,
            "families": self.families,
            "worker_agent": self.worker_agent,
            "slots": self.slots,
            "budget_s": self.budget_s,
            "spent_s": self.spent_s,
            "fraction_spent": self.fraction_spent,
            "reviewed": list(self.reviewed),
            "recent_decisions": [
                {"seq": d.seq, "action": d.action, "rationale": d.rationale} for d in self.recent_decisions
            ],
        }


@main_agent("llm")
class LLMMain:
    def __init__(self) -> None:
        self._model: Any = None

    # -- protocol --------------------------------------------------------------------------
    def start(self, ctx: MainContext, graph: ResearchGraph) -> None:
        if not graph.workers:
            self._turn(
                ctx,
                graph,
                "start",
                None,
                f"The run starts: open the first directions, at most one Worker per slot ({ctx.slots}).",
            )

    def on_event(self, ctx: MainContext, graph: ResearchGraph, event: OrchestraEvent) -> None:
        seq, kind, node = event
        what = f"Worker {node} finalized" if kind == "finalize" else f"Reviewer {node} reported"
        self._turn(ctx, graph, kind, event, f"Orchestration event {seq}: {what}. Decide what the graph needs next.")

    def on_idle(self, ctx: MainContext, graph: ResearchGraph, free_slots: int) -> bool:
        out = self._turn(
            ctx,
            graph,
            "idle",
            None,
            f"{free_slots} slot(s) are idle and nothing is pending. Add "
            "Workers or reviews (then record the decision), or answer in text "
            "if nothing is worth adding.",
            stop_on_text=True,
        )
        return any(name in ADDS for name, _ in out.ok_calls)

    def on_guidance(self, ctx: MainContext, graph: ResearchGraph, guidance: Guidance) -> None:
        """A person's guidance: its text and structured parts in the brief; the decision cites it."""
        p = guidance.request
        parts = [f"{k}: {', '.join(v)}" for k, v in (("prefer", p.prefer), ("avoid", p.avoid)) if v]
        parts += [f"stop (the harness stops them): {', '.join(p.stop_worker)}"] if p.stop_worker else []
        parts += [f"launches: {p.flow}d by the harness"] if p.flow else []
        header = (
            f"Operator guidance (event {guidance.seq}, from the person {guidance.by}). Their text:\n"
            f"{p.text or '(none)'}\n" + "".join(f"- {x}\n" for x in parts) + "Weigh it against the evidence and "
            "record a decision (it will cite this event); it cannot change the contract or the budget."
        )
        self._turn(ctx, graph, "guidance", None, header, guidance=guidance.seq)

    def finish(self, ctx: MainContext, graph: ResearchGraph, reason: str) -> None:
        try:
            self._turn(
                ctx,
                graph,
                "finish",
                None,
                f"The run ends ({reason}). Nominate the reviewed candidates "
                "with candidate_nominate, then record the decision `stop`.",
            )
        finally:
            if self._model is not None:
                self._model.close()
                self._model = None

    # -- one turn --------------------------------------------------------------------------
    def _turn(
        self,
        ctx: MainContext,
        graph: ResearchGraph,
        tag: str,
        event: OrchestraEvent | None,
        header: str,
        stop_on_text: bool = False,
        guidance: int | None = None,
    ) -> Outcome:
        cfg, prompt = recorded_role(ctx.expos.reader, "main")
        if self._model is None:
            self._model = make_model(cfg, "main")
        view = ctx.call("graph.read").model_dump(mode="json")
        reviewed = sorted(
            (x for x in view["experiments"] if x.get("review_score") is not None),
            key=lambda x: (-x["review_score"], x["experiment_id"]),
        )
        brief = MainBrief(
            event=event,
            tag=tag,
            task=ctx.expos.contract.task,
            capability=ctx.expos.contract.capability,
            families=self._families(ctx),
            worker_agent=ctx.worker,
            slots=ctx.slots,
            budget_s=ctx.budget_s,
            spent_s=round(ctx.spent_s(), 1),
            fraction_spent=round(ctx.fraction_spent(), 3),
            reviewed=[x["experiment_id"] for x in reviewed],
            recent_decisions=[
                RecentDecision(d.seq, d.action, clip(d.rationale, 300) or "")
                for d in ctx.expos.projection().state.decisions[-8:]
            ],
        )
        task = "\n\n".join(
            [
                header,
                brief_block(brief.as_json()),
                "The research graph (graph_read):\n" + (clip(json.dumps(view, sort_keys=True), 20_000) or ""),
            ]
        )
        loop = AgentLoop(
            model=self._model,
            config=cfg,
            expos=ctx.expos,
            caller=ctx.caller,
            tools=tools_for("main"),
            finish={"decision.record"},
            episode=tag,
            stop_on_text=stop_on_text,
            deadline=_clock.now() + max(60.0, 0.2 * ctx.budget_s),
            prepare=self._prepare(ctx, tag, event, guidance),
        )
        out = loop.run(prompt.text, task)
        added = sum(1 for name, _ in out.ok_calls if name in ADDS)
        # An idle turn that added nothing needs no decision (nothing changed); any other turn
        # that ended without one gets one, so that its event counts as answered.
        if not out.finished and (tag != "idle" or added):
            why = out.reason + (f": {out.error}" if out.error else "")
            action = "stop" if tag == "finish" else ("branch" if added and tag == "start" else "continue")
            detail: dict[str, Any] = {"fallback": why}
            if guidance is not None:
                detail["guidance"] = guidance
            fallback: dict[str, Any] = {
                "action": action,
                "evidence": [event[0]] if event else [guidance] if guidance is not None else [],
                "detail": detail,
                "rationale": f"[recorded by the harness] the Main agent ended its turn without a decision ({why}); "
                f"{added} node(s) added in the turn",
            }
            if event:
                fallback["answers"] = event[0]
            ctx.call("decision.record", fallback)
        return out

    def _prepare(self, ctx: MainContext, tag: str, event: OrchestraEvent | None, guidance: int | None = None) -> Any:
        def prepare(tool: str, args: dict[str, Any]) -> dict[str, Any]:
            if tool == "decision.record":
                if tag == "finish" and args.get("action") != "stop":
                    raise ToolInvalid("the run is ending: record the decision with action `stop`")
                # Which event a decision answers is the harness's fact, whatever the model wrote.
                args = {k: v for k, v in args.items() if k != "answers"}
                if event is not None:
                    args["answers"] = event[0]
                if guidance is not None:  # which guidance a decision answers is the harness's fact
                    given = args.get("evidence")
                    evidence: list[Any] = list(given) if isinstance(given, list) else []
                    detail = {**(args.get("detail") or {}), "guidance": guidance}
                    args = {**args, "detail": detail, "evidence": evidence + [guidance] * (guidance not in evidence)}
            elif tool == "worker.add":
                args = {**args, "direction": self._direction(ctx, args.get("direction"))}
            return args

        return prepare

    # -- directions ------------------------------------------------------------------------
    @staticmethod
    def _families(ctx: MainContext) -> dict[str, list[str]]:
        """Each generator family with the training methods it offers, its usual one first."""
        out: dict[str, list[str]] = {}
        for d in default_directions(ctx.expos.task, seed=ctx.seed):
            out.setdefault(d.family, []).append(d.method)
        return dict(sorted(out.items()))

    def _direction(self, ctx: MainContext, given: Any) -> dict[str, Any]:
        if given is None:
            given = {}
        if not isinstance(given, dict):
            raise ToolInvalid('direction must be an object such as {"family": ...}')
        directions = default_directions(ctx.expos.task, seed=ctx.seed)
        defaults = {(d.family, d.method): d for d in directions}
        usual: dict[str, Direction] = {}
        for d in directions:
            usual.setdefault(d.family, d)  # a family's first method is the one it is made for
        family = given.get("family")
        if family is None and ctx.worker != "tpe":
            family = sorted(usual)[0]  # an LLM Worker reads the family as a hint only
        if family not in usual:
            raise ToolInvalid(f"direction.family must be one of {sorted(usual)} (got {family!r})")
        method = given.get("method", usual[family].method)
        if (family, method) not in defaults:
            methods = [m for f, m in defaults if f == family]
            raise ToolInvalid(f"direction.method for family {family} must be one of {methods} (got {method!r})")
        base = defaults[(family, method)]
        train = given.get("train")
        if train is not None and not isinstance(train, dict):
            raise ToolInvalid("direction.train must be an object of training ranges")
        # Ranges the Main names replace the method's own one by one: a GRPO direction keeps its
        # completions per prompt when the Main only widens the learning rate.
        train = {**base.model_dump(mode="json")["train"], **(train or {})}
        allowance = min(max(30.0, 0.3 * ctx.budget_s), SHARE * ctx.budget_s)
        merged = {
            **base.model_dump(mode="json"),
            **given,
            "family": family,
            "method": method,
            "train": train,
            "agent": ctx.worker,
        }
        if "train" in given and "enqueue" not in given:  # the opening trial moved inside the Main's ranges
            merged["enqueue"] = [
                within_ranges(t, {k: Range.model_validate(r) for k, r in train.items()}) for t in base.enqueue
            ]
        try:
            merged["seconds"] = float(given.get("seconds") or allowance)
        except (TypeError, ValueError):
            raise ToolInvalid(f"direction.seconds must be a number of seconds (got {given.get('seconds')!r})") from None
        try:
            direction = Direction.model_validate(merged)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ToolInvalid(f"direction.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from None
        problem = grpo_batch_problem(direction.train) if method == "grpo" else None
        if problem is not None:
            raise ToolInvalid(f"direction.train: {problem}")
        return direction.model_dump(mode="json")
