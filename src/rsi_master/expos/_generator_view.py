"""A generator family as an agent sees it: its name, description, methods and knobs, with
no generating code. The door sends it in `contract.show`, so a process that holds no run (an
agent's MCP server) describes a task directory's families without loading the task."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from ..tasks import GeneratorFamily
    from ._contract import TaskContract

__all__ = ["GeneratorView", "KnobView", "generator_views"]

KnobValue = bool | int | float | str


class KnobView(BaseModel):
    """One knob of a generator family, as the tool schemas describe it."""

    name: str
    kind: Literal["int", "float", "choice"]
    default: KnobValue | None = Field(description="The value a call that omits the knob gets.")
    low: float | None = None
    high: float | None = None
    choices: list[KnobValue] = Field(default_factory=list, description="The values a `choice` knob takes.")
    help: str = ""


class GeneratorView(BaseModel):
    """One of the run's generator families (its public description, never its rows)."""

    name: str = Field(description="The family's name, as `data.generate` and `data.sample` take it.")
    description: str
    source: Literal["generate", "checkpoint"] = Field(
        description="`generate`: rows from `data.generate`; `checkpoint`: sampled by `data.sample`."
    )
    methods: list[str] = Field(description="The training methods its rows are made for, the first the usual one.")
    knobs: list[KnobView]

    @classmethod
    def of(cls, family: GeneratorFamily) -> GeneratorView:
        return cls(
            name=family.name,
            description=family.description,
            source=family.source,
            methods=list(family.methods),
            knobs=[
                KnobView(
                    name=k.name,
                    kind=k.kind,
                    default=k.default,
                    low=k.low,
                    high=k.high,
                    choices=list(k.choices),
                    help=k.help,
                )
                for k in family.knobs
            ],
        )


class RunGenerators(Protocol):
    """What the views are read from: a session, or a tool's context."""

    @property
    def contract(self) -> TaskContract: ...

    def generators(self) -> dict[str, GeneratorFamily]: ...


def generator_views(run: RunGenerators) -> list[GeneratorView]:
    """The contract's allowed generator families, from the run's own task."""
    task, families = run.contract.task, run.generators()
    allowed = (g.split("/", 1)[1] for g in run.contract.allowed_generators if g.startswith(task + "/"))
    return [GeneratorView.of(families[name]) for name in allowed if name in families]
