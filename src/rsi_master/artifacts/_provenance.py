"""Provenance: which recorded events produced an artifact, and from what, recursively."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..ledger import Ledger

__all__ = ["ProducingEvent", "ProvenanceNode", "provenance"]


@dataclass
class ProducingEvent:
    seq: int
    kind: str
    actor: str
    inputs: list[ProvenanceNode] = field(default_factory=list)


@dataclass
class ProvenanceNode:
    """An artifact and the events that output it. No producer: a root input (e.g. the base model)."""

    digest: str
    produced_by: list[ProducingEvent] = field(default_factory=list)
    seen_before: bool = False  # already expanded elsewhere in this graph (shared input)

    def to_dict(self) -> dict[str, Any]:
        return {
            "digest": self.digest,
            "seen_before": self.seen_before,
            "produced_by": [
                {"seq": e.seq, "kind": e.kind, "actor": e.actor, "inputs": [i.to_dict() for i in e.inputs]}
                for e in self.produced_by
            ],
        }

    def events(self) -> list[int]:
        """Every event sequence number in the graph, sorted."""
        out: set[int] = set()
        stack = [self]
        while stack:
            node = stack.pop()
            for e in node.produced_by:
                out.add(e.seq)
                stack.extend(e.inputs)
        return sorted(out)


def provenance(ledger: Ledger, digest: str, *, max_depth: int = 64) -> ProvenanceNode:
    """Walk output->input references back through the ledger's artifact index."""
    conn = ledger.connection
    expanded: set[str] = set()

    def visit(d: str, depth: int) -> ProvenanceNode:
        node = ProvenanceNode(d)
        if d in expanded or depth > max_depth:
            node.seen_before = d in expanded
            return node
        expanded.add(d)
        rows = conn.execute(
            "SELECT e.seq, e.kind, e.actor_role || ':' || e.actor_id FROM artifact_refs r"
            " JOIN events e ON e.seq = r.seq WHERE r.digest = ? AND r.role = 'output' ORDER BY e.seq",
            (d,),
        ).fetchall()
        for seq, kind, actor in rows:
            inputs = conn.execute(
                "SELECT DISTINCT digest FROM artifact_refs WHERE seq = ? AND role = 'input' ORDER BY digest", (seq,)
            ).fetchall()
            node.produced_by.append(ProducingEvent(seq, kind, actor, [visit(i, depth + 1) for (i,) in inputs]))
        return node

    return visit(digest, 0)
