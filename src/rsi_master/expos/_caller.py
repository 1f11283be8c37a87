"""Who acts: the caller every tool call and record names."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Caller"]


@dataclass(frozen=True)
class Caller:
    """Who acts. Outside the harness's own code a Caller comes only from `ExpOS.authenticate`
    (a capability the harness issued); `cap` is that capability's id, recorded on every event."""

    role: str
    id: str
    cap: str | None = None

    def actor(self) -> dict[str, str]:
        if self.cap is None:
            return {"role": self.role, "id": self.id}
        return {"role": self.role, "id": self.id, "cap": self.cap}
