"""Long-term memory routes (``/entities/...``)."""

from __future__ import annotations

from nams_local.backend import DEFAULT_SEARCH_LIMIT
from nams_local.errors import InvalidInputError
from nams_local.models import (
    Entity,
    EntityDetails,
    EntityGraph,
    EntityHistory,
    FeedbackResult,
    MergeResult,
    SearchMode,
    SearchResult,
)
from nams_local.validation import (
    check_date,
    check_entity_name,
    check_limit,
    check_mode,
    check_query,
    check_required,
    check_score,
    check_string_map,
)

from .base import HostedBase
from .conversations import search_type
from .parse import envelope, lenient
from .rest import compact, segment
from .shapes import read_graph, read_history

__all__ = ["EntityRoutes"]


class EntityRoutes(HostedBase):
    async def add_entity(
        self,
        name: str,
        type: str,
        description: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> Entity:
        name = check_entity_name(name)
        type = check_required(type, "type")
        check_string_map(properties, "entity properties")
        sent = compact(
            {"name": name, "type": type, "description": description, "properties": properties}
        )
        body = await self._rest.call("POST", "/entities", body=sent)
        # The hosted answer is {id, name, type, description}: properties come from the request.
        return lenient(Entity, body, **sent)

    async def list_entities(self, type: str | None = None) -> list[Entity]:
        body = await self._rest.call("GET", "/entities", params={"type": type})
        return [lenient(Entity, raw) for raw in envelope(body, "entities")]

    async def get_entity(self, entity_id: str) -> EntityDetails:
        body = await self._rest.call("GET", f"/entities/{segment(entity_id)}")
        return lenient(EntityDetails, body, id=entity_id)

    async def update_entity(
        self, entity_id: str, name: str | None = None, description: str | None = None
    ) -> None:
        if name is None and description is None:
            raise InvalidInputError("nothing to update: give a name or a description")
        if name is not None:
            name = check_entity_name(name)
        await self._rest.call(
            "PUT",
            f"/entities/{segment(entity_id)}",
            body=compact({"name": name, "description": description}),
        )

    async def delete_entity(self, entity_id: str) -> None:
        await self._delete(f"/entities/{segment(entity_id)}")

    async def search_entities(
        self,
        query: str,
        type: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
        mode: SearchMode | None = None,
    ) -> SearchResult[Entity]:
        check_query(query)
        check_limit(limit)
        mode = await self._search_mode(check_mode(mode))
        body = await self._rest.call(
            "POST",
            "/entities/search",
            body=compact({"query": query, "type": type, "limit": limit, "mode": mode}),
        )
        items = [lenient(Entity, raw) for raw in envelope(body, "entities")]
        return SearchResult[Entity](items=items, search_type=search_type(body))

    async def entity_feedback(
        self, entity_id: str, user_score: float | None = None, confirmed: bool | None = None
    ) -> FeedbackResult:
        check_score(user_score)
        body = await self._rest.call(
            "PUT",
            f"/entities/{segment(entity_id)}/feedback",
            body=compact({"userScore": user_score, "confirmed": confirmed}),
        )
        return lenient(FeedbackResult, body, id=entity_id, updated=True)

    async def get_entity_history(self, entity_id: str) -> EntityHistory:
        body = await self._rest.call("GET", f"/entities/{segment(entity_id)}/history")
        return read_history(body, entity_id)

    async def merge_entities(self, source_id: str, target_id: str) -> MergeResult:
        """``source_id`` is merged into ``target_id`` (the source stays, inert)."""
        check_required(target_id, "target_id")
        body = await self._rest.call(
            "POST", f"/entities/{segment(source_id)}/merge", body={"targetId": target_id}
        )
        return lenient(MergeResult, body, source_id=source_id, target_id=target_id)

    async def get_graph(self, as_of: str | None = None) -> EntityGraph:
        as_of = check_date(as_of, "as_of")
        # ``asOf`` is an extension: never sent to hosted NAMS (it is dropped, said once).
        if as_of is not None and await self._validity(True):
            params = {"asOf": as_of}
            return read_graph(await self._rest.call("GET", "/entities/graph", params=params))
        return read_graph(await self._rest.call("GET", "/entities/graph"))
