"""A networkx mirror of one workspace's entity graph.

SQLite is the truth; the mirror is built from it on first use after the store opens and
kept in step by every write, so neighbourhood questions (who is within two hops of Alex?)
are answered in memory without recursive SQL. Merged (inert) entities are not in it.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
from sqlalchemy import Connection, select

from nams_local.models import EntityGraph, GraphEdge, GraphNode

from . import schema as s
from .rows import loads

__all__ = ["EntityGraphMirror"]


class EntityGraphMirror:
    """Entities as nodes (keyed by id), relationships as keyed edges of a MultiDiGraph."""

    def __init__(self) -> None:
        self.graph: Any = nx.MultiDiGraph()

    @classmethod
    def load(cls, conn: Connection, workspace: str) -> EntityGraphMirror:
        mirror = cls()
        e = s.entities
        # Creation order, as the incremental updates build it: a rebuilt mirror lists the
        # same nodes and edges in the same order as the one it replaces.
        rows = conn.execute(
            select(e.c.pk, e.c.id, e.c.name, e.c.type, e.c.description)
            .where(e.c.workspace == workspace, e.c.merged_into_pk.is_(None))
            .order_by(e.c.pk)
        ).all()
        id_by_pk: dict[int, str] = {}
        for pk, id_, name, type_, description in rows:
            id_by_pk[pk] = id_
            mirror.add_node(id_, name, type_, description)
        r = s.relationships
        for rel in conn.execute(
            select(r.c.id, r.c.source_pk, r.c.target_pk, r.c.type, r.c.properties, r.c.confidence)
            .where(r.c.workspace == workspace)
            .order_by(r.c.pk)
        ).all():
            source, target = id_by_pk.get(rel.source_pk), id_by_pk.get(rel.target_pk)
            if source is not None and target is not None:
                mirror.add_edge(
                    rel.id, source, target, rel.type, loads(rel.properties), rel.confidence
                )
        return mirror

    def add_node(self, id_: str, name: str, type_: str, description: str | None) -> None:
        self.graph.add_node(id_, name=name, type=type_, description=description)

    def remove_node(self, id_: str) -> None:
        if self.graph.has_node(id_):
            self.graph.remove_node(id_)

    def add_edge(
        self,
        id_: str,
        source: str,
        target: str,
        type_: str,
        properties: dict[str, Any],
        confidence: float | None,
    ) -> None:
        self.graph.add_edge(
            source, target, key=id_, type=type_, properties=properties, confidence=confidence
        )

    def remove_edge(self, id_: str) -> None:
        for u, v, key in list(self.graph.edges(keys=True)):
            if key == id_:
                self.graph.remove_edge(u, v, key=key)
                return

    def view(self, graph: Any = None) -> EntityGraph:
        g = self.graph if graph is None else graph
        nodes = [
            GraphNode(id=n, name=d["name"], type=d["type"], description=d["description"])
            for n, d in g.nodes(data=True)
        ]
        edges = [
            GraphEdge(
                id=key,
                source=u,
                target=v,
                type=d["type"],
                properties=d["properties"],
                confidence=d["confidence"],
            )
            for u, v, key, d in g.edges(keys=True, data=True)
        ]
        return EntityGraph(nodes=nodes, edges=edges)

    def neighbourhood(self, id_: str, depth: int) -> EntityGraph:
        """Entities within ``depth`` hops of ``id_`` in either direction, with their edges."""
        sub = nx.ego_graph(self.graph, id_, radius=depth, undirected=True)
        return self.view(sub)
