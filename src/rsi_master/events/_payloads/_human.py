"""Payloads a person writes into a running campaign: guidance to its Main agent."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from .._base import Payload, kind
from .._limits import ID_MAX, TEXT_MAX

__all__ = ["GUIDANCE_TEXT_MAX", "HumanGuidance"]

# Bytes of UTF-8, not characters: the bound is on what the ledger and an LLM's brief grow by.
GUIDANCE_TEXT_MAX = TEXT_MAX


def _bounded_text(value: str) -> str:
    size = len(value.encode("utf-8"))
    if size > GUIDANCE_TEXT_MAX:
        raise ValueError(f"guidance text of {size} bytes; at most {GUIDANCE_TEXT_MAX}")
    return value


GuidanceText = Annotated[str, AfterValidator(_bounded_text)]
DirectionName = Annotated[str, Field(min_length=1, max_length=ID_MAX)]


@kind("human.guidance")
class HumanGuidance(Payload):
    """A person's guidance to a running campaign's Main agent, written by the operator's own code
    (actor role `operator`, the operating-system user as id). It names directions and nodes only:
    it has no field for the contract, the budget or any split."""

    version: int = Field(default=1, description="Schema version of the guidance.")
    text: GuidanceText = Field(default="", description="Free text for the Main (at most 4096 bytes of UTF-8).")
    prefer: list[DirectionName] = Field(
        default_factory=list, max_length=16, description="Directions (family or `family:method`) to open first."
    )
    avoid: list[DirectionName] = Field(
        default_factory=list, max_length=16, description="Directions (family or `family:method`) not to open."
    )
    stop_worker: list[DirectionName] = Field(
        default_factory=list, max_length=16, description="Workers to stop: a running one finalizes with what it has."
    )
    flow: Literal["pause", "resume"] | None = Field(
        default=None,
        description="`pause`: no new job is launched (running ones finish); `resume`: launches go on.",
    )

    @model_validator(mode="after")
    def _says_something(self) -> HumanGuidance:
        if not (self.text.strip() or self.prefer or self.avoid or self.stop_worker or self.flow):
            raise ValueError("guidance says nothing: give a text, a direction, a worker to stop, or pause/resume")
        return self
