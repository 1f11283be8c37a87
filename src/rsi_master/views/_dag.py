"""The research DAG as a Plotly figure: networkx lays the nodes out in layers (each node one
layer after the latest node it links from), Plotly draws them; no layout of our own."""

from __future__ import annotations

import html

import networkx as nx
import plotly.graph_objects as go

from ._model import NodeView, RunView

__all__ = ["dag_figure", "dag_layout"]

_HOVER_CHARS = 160

LABELLED_NODES = 300


def dag_layout(nodes: list[NodeView], edges: list[tuple[str, str, str]]) -> dict[str, tuple[float, float]]:
    """Node id -> (x, y): layers along x, by networkx's topological generations of the graph with
    its cycles (a forged ledger may hold one) condensed into single layers."""
    g = nx.DiGraph()
    g.add_nodes_from(n.id for n in nodes)
    g.add_edges_from((a, b) for a, b, _kind in edges if a in g and b in g)
    if not g:
        return {}
    cond = nx.condensation(g)
    layer_of = {c: i for i, gen in enumerate(nx.topological_generations(cond)) for c in gen}
    order = {n.id: n.seq for n in nodes}
    for node in g:
        g.nodes[node]["layer"] = layer_of[cond.graph["mapping"][node]]
    # Within a layer networkx keeps insertion order: nodes are inserted in ledger order.
    pos = nx.multipartite_layout(g, subset_key="layer", align="vertical", scale=1.0)
    return {n: (float(x), float(y)) for n, (x, y) in sorted(pos.items(), key=lambda kv: order[kv[0]])}


def _hover(n: NodeView) -> str:
    text = n.task if len(n.task) <= _HOVER_CHARS else n.task[:_HOVER_CHARS] + "…"
    best = max((s for x in n.experiments if (s := x.score("dev")) is not None), default=None)
    lines = [f"<b>{html.escape(n.id)}</b> ({n.kind}{'' if n.done else ', running'})", html.escape(text)]
    if n.kind == "worker":
        lines.append(f"{len(n.experiments)} experiments" + (f", best dev {best:.3f}" if best is not None else ""))
    elif n.review is not None:
        lines.append(f"verdict {html.escape(n.review.verdict)}")
    return "<br>".join(lines)


def dag_figure(view: RunView) -> go.Figure:
    pos = dag_layout(view.nodes, view.edges)
    fig = go.Figure()
    for kind, dash, name in (("context", "solid", "context (Worker → Worker)"), ("scope", "dot", "review scope")):
        xs: list[float | None] = []
        ys: list[float | None] = []
        for a, b, k in view.edges:
            if k == kind and a in pos and b in pos:
                xs += [pos[a][0], pos[b][0], None]
                ys += [pos[a][1], pos[b][1], None]
        fig.add_trace(
            go.Scatter(
                x=xs, y=ys, mode="lines", name=name, hoverinfo="skip", line={"width": 1, "dash": dash, "color": "#888"}
            )
        )
    for kind, symbol, color in (("worker", "circle", "#1f77b4"), ("reviewer", "diamond", "#d62728")):
        members = [n for n in view.nodes if n.kind == kind and n.id in pos]
        fig.add_trace(
            go.Scatter(
                x=[pos[n.id][0] for n in members],
                y=[pos[n.id][1] for n in members],
                # Labels on a large graph cost the browser more than they tell (they overlap):
                # past `LABELLED_NODES` a node's id is in its hover and its panel only.
                mode="markers+text" if len(view.nodes) <= LABELLED_NODES else "markers",
                name=f"{kind}s",
                text=[html.escape(n.id) for n in members],  # ids an LLM Main chose: text, never markup
                textposition="top center",
                customdata=[n.id for n in members],
                hovertext=[_hover(n) for n in members],
                hoverinfo="text",
                marker={
                    "symbol": symbol,
                    "size": 16,
                    "color": color,
                    "line": {"width": 2, "color": ["#000" if n.done else "#fff" for n in members]},
                },
            )
        )
    fig.update_layout(
        title="Research DAG (click a node)",
        xaxis={"visible": False},
        yaxis={"visible": False},
        height=max(360, 40 * _widest_layer(pos)),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h"},
        clickmode="event",
    )
    return fig


def _widest_layer(pos: dict[str, tuple[float, float]]) -> int:
    counts: dict[float, int] = {}
    for x, _y in pos.values():
        counts[round(x, 6)] = counts.get(round(x, 6), 0) + 1
    return max(counts.values(), default=0)
