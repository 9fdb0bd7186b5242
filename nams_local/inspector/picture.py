"""The graph as a picture: a deterministic layout computed here, drawn as inline SVG.

No JavaScript and no layout engine in the browser: positions are computed in Python and
the template draws circles, lines and text, each node a link to its entity page (click to
move). Around an entity the layout is radial (the entity in the middle, each hop one ring
further out, neighbours spread by angle in name order), so the same graph always looks
the same; the whole workspace uses networkx's spring layout with a fixed seed, and only
up to ``MAX_WORKSPACE_NODES`` nodes (beyond that a picture is unreadable: the page says
so and points at the entity view instead).
"""

from __future__ import annotations

import hashlib
import math
from collections import deque
from dataclasses import dataclass

import networkx as nx

from nams_local.models import EntityGraph

__all__ = ["MAX_WORKSPACE_NODES", "Picture", "PictureEdge", "PictureNode", "layout"]

MAX_WORKSPACE_NODES = 150
_SIZE = 720
_MARGIN = 70
_LABEL_CHARS = 24
_PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
)


@dataclass(frozen=True, slots=True)
class PictureNode:
    id: str
    label: str
    title: str
    type: str
    x: float
    y: float
    colour: str
    centre: bool


@dataclass(frozen=True, slots=True)
class PictureEdge:
    label: str
    x1: float
    y1: float
    x2: float
    y2: float
    current: bool

    @property
    def mid_x(self) -> float:
        return (self.x1 + self.x2) / 2

    @property
    def mid_y(self) -> float:
        return (self.y1 + self.y2) / 2


@dataclass(frozen=True, slots=True)
class Picture:
    size: int
    nodes: list[PictureNode]
    edges: list[PictureEdge]


def _colour(entity_type: str) -> str:
    digest = hashlib.sha256(entity_type.lower().encode()).digest()
    return _PALETTE[digest[0] % len(_PALETTE)]


def _short(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def _radial(graph: EntityGraph, centre: str) -> dict[str, tuple[float, float]]:
    names = {node.id: node.name.lower() for node in graph.nodes}
    neighbours: dict[str, set[str]] = {node.id: set() for node in graph.nodes}
    for edge in graph.edges:
        if edge.source in neighbours and edge.target in neighbours:
            neighbours[edge.source].add(edge.target)
            neighbours[edge.target].add(edge.source)
    depth = {centre: 0}
    queue = deque([centre])
    while queue:
        current = queue.popleft()
        for other in sorted(neighbours.get(current, ()), key=lambda n: (names[n], n)):
            if other not in depth:
                depth[other] = depth[current] + 1
                queue.append(other)
    for node_id in sorted(neighbours, key=lambda n: (names[n], n)):
        depth.setdefault(node_id, max(depth.values()) + 1)
    rings = max(depth.values())
    half = _SIZE / 2
    step = (half - _MARGIN) / max(rings, 1)
    positions: dict[str, tuple[float, float]] = {}
    for ring in range(rings + 1):
        members = sorted((n for n, d in depth.items() if d == ring), key=lambda n: (names[n], n))
        for index, node_id in enumerate(members):
            if ring == 0:
                positions[node_id] = (half, half)
                continue
            angle = 2 * math.pi * index / len(members) - math.pi / 2 + ring * 0.4
            positions[node_id] = (
                half + ring * step * math.cos(angle),
                half + ring * step * math.sin(angle),
            )
    return positions


def _spring(graph: EntityGraph) -> dict[str, tuple[float, float]]:
    """Each connected component laid out by itself (spring layout, fixed seed) in a cell of
    a grid, largest first: one spring layout over everything packs the connected part
    into a corner whenever a few entities stand alone."""
    g: nx.Graph = nx.Graph()
    g.add_nodes_from(sorted(node.id for node in graph.nodes))
    g.add_edges_from((edge.source, edge.target) for edge in graph.edges)
    components = sorted(
        (sorted(c) for c in nx.connected_components(g)), key=lambda c: (-len(c), c[0])
    )
    columns = max(1, math.ceil(math.sqrt(len(components))))
    rows = math.ceil(len(components) / columns)
    cell_w, cell_h = (_SIZE - 2 * _MARGIN) / columns, (_SIZE - 2 * _MARGIN) / rows
    positions: dict[str, tuple[float, float]] = {}
    for index, members in enumerate(components):
        left = _MARGIN + (index % columns) * cell_w
        top = _MARGIN + (index // columns) * cell_h
        if len(members) == 1:
            positions[members[0]] = (left + cell_w / 2, top + cell_h / 2)
            continue
        raw = nx.spring_layout(g.subgraph(members), seed=7)
        xs = [float(p[0]) for p in raw.values()]
        ys = [float(p[1]) for p in raw.values()]
        span_x, span_y = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 1.0
        pad = 0.15
        for node_id, (x, y) in raw.items():
            positions[node_id] = (
                left + cell_w * (pad + (1 - 2 * pad) * (float(x) - min(xs)) / span_x),
                top + cell_h * (pad + (1 - 2 * pad) * (float(y) - min(ys)) / span_y),
            )
    return positions


def layout(graph: EntityGraph, centre: str | None = None) -> Picture:
    """Positions for every node and edge of ``graph``: radial around ``centre`` when given
    (and present), else the spring layout."""
    ids = {node.id for node in graph.nodes}
    positions = _radial(graph, centre) if centre in ids and centre else _spring(graph)
    nodes = [
        PictureNode(
            id=node.id,
            label=_short(node.name),
            title=f"{node.name} ({node.type})",
            type=node.type,
            x=positions[node.id][0],
            y=positions[node.id][1],
            colour=_colour(node.type),
            centre=node.id == centre,
        )
        for node in sorted(graph.nodes, key=lambda n: (n.name.lower(), n.id))
    ]
    edges = [
        PictureEdge(
            label=_short(edge.type),
            x1=positions[edge.source][0],
            y1=positions[edge.source][1],
            x2=positions[edge.target][0],
            y2=positions[edge.target][1],
            current=edge.current is not False,
        )
        for edge in graph.edges
        if edge.source in positions and edge.target in positions
    ]
    return Picture(_SIZE, nodes, edges)
