"""A networkx mirror of one workspace's entity graph.

SQLite is the truth; the mirror is built from it on first use after the store opens and
kept in step by every write, so neighbourhood questions (who is within two hops of Alex?)
are answered in memory without recursive SQL. Merged (inert) entities are not in it.
It also indexes entities by type and resolution key, so "is this name an entity we
already have?" (``find``) costs a dict lookup on every write.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
from sqlalchemy import Connection, select

from nams_local.models import EntityGraph, GraphEdge, GraphNode

from . import schema as s
from .resolution import Resolution
from .rows import loads
from .validity_rules import edge_validity, holds_at

__all__ = ["EntityGraphMirror"]


class EntityGraphMirror:
    """Entities as nodes (keyed by id), relationships as keyed edges of a MultiDiGraph."""

    def __init__(self, resolution: Resolution | None = None) -> None:
        self.graph: Any = nx.MultiDiGraph()
        self.resolution = resolution or Resolution()
        #: (type, key) → ids of active entities with that key, oldest first.
        self._by_key: dict[tuple[str, str], list[str]] = {}
        self._key_of: dict[str, tuple[str, str]] = {}

    @classmethod
    def load(
        cls, conn: Connection, workspace: str, resolution: Resolution | None = None
    ) -> EntityGraphMirror:
        mirror = cls(resolution)
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
        for rel in conn.execute(select(r).where(r.c.workspace == workspace).order_by(r.c.pk)).all():
            source, target = id_by_pk.get(rel.source_pk), id_by_pk.get(rel.target_pk)
            if source is not None and target is not None:
                mirror.add_edge(
                    rel.id,
                    source,
                    target,
                    rel.type,
                    loads(rel.properties),
                    rel.confidence,
                    edge_validity(rel),
                )
        return mirror

    def add_node(self, id_: str, name: str, type_: str, description: str | None) -> None:
        """Add an entity, or update it (a rename re-keys it)."""
        self.graph.add_node(id_, name=name, type=type_, description=description)
        self._unkey(id_)
        slot = self._slot(name, type_)
        self._by_key.setdefault(slot, []).append(id_)
        self._key_of[id_] = slot

    def remove_node(self, id_: str) -> None:
        if self.graph.has_node(id_):
            self.graph.remove_node(id_)
        self._unkey(id_)

    def _slot(self, name: str, type_: str) -> tuple[str, str]:
        return (type_.strip().casefold(), self.resolution.key(name, type_))

    def _unkey(self, id_: str) -> None:
        slot = self._key_of.pop(id_, None)
        if slot is not None:
            ids = self._by_key[slot]
            ids.remove(id_)
            if not ids:
                del self._by_key[slot]

    def find(self, name: str, type_: str) -> str | None:
        """The oldest active entity that ``name`` of ``type_`` resolves to, if any."""
        ids = self._by_key.get(self._slot(name, type_))
        return ids[0] if ids else None

    def candidates(self, name: str, type_: str, exclude: str) -> list[tuple[str, float]]:
        """Near matches of ``name`` among entities of ``type_``: ``(id, similarity)``."""
        type_key, key = self._slot(name, type_)
        # A snapshot (one C-level copy under the GIL): readers call this while the writer
        # thread adds and removes keys.
        others = [
            (ids[0], other)
            for (t, other), ids in list(self._by_key.items())
            if t == type_key and ids and ids[0] != exclude
        ]
        return self.resolution.candidates(key, others)

    def add_edge(
        self,
        id_: str,
        source: str,
        target: str,
        type_: str,
        properties: dict[str, Any],
        confidence: float | None,
        validity: dict[str, Any] | None = None,
    ) -> None:
        """Add an edge, or update it (same id: its validity changed)."""
        self.graph.add_edge(
            source,
            target,
            key=id_,
            type=type_,
            properties=properties,
            confidence=confidence,
            validity=validity or {},
        )

    def remove_edge(self, id_: str) -> None:
        for u, v, key in list(self.graph.edges(keys=True)):
            if key == id_:
                self.graph.remove_edge(u, v, key=key)
                return

    def at(self, as_of: str | None) -> Any:
        """The graph, or (with ``as_of``) a view of only the edges that held then."""
        if as_of is None:
            return self.graph

        def held(u: str, v: str, key: str) -> bool:
            validity = self.graph.edges[u, v, key]["validity"]
            return holds_at(validity.get("valid_from"), validity.get("valid_until"), as_of)

        return nx.subgraph_view(self.graph, filter_edge=held)

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
                **d["validity"],
            )
            for u, v, key, d in g.edges(keys=True, data=True)
        ]
        return EntityGraph(nodes=nodes, edges=edges)

    def neighbourhood(self, id_: str, depth: int, as_of: str | None = None) -> EntityGraph:
        """Entities within ``depth`` hops of ``id_`` in either direction, with their edges
        (with ``as_of``: over the edges that held then)."""
        sub = nx.ego_graph(self.at(as_of), id_, radius=depth, undirected=True)
        return self.view(sub)
