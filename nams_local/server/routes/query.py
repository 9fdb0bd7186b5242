"""Read-only Cypher: ``POST /v1/query``.

``200 {columns, rows, stats}`` for a read; the backend raises ``InvalidInputError`` for a
write clause or Cypher it cannot run (``400``), and ``NotSupportedError`` when it lacks
``cypher_query`` (``501``) — the app's error handlers turn both into ``{"error": ...}``.
A query past a limit of the engine is ``400`` (time, memory, rows), ``429`` (too many at
once in the workspace) or ``503`` (no worker free in time); see ``docs/wire-decisions.md``.
When the client disconnects, the query is cancelled, which stops its worker.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request

from nams_local.models import QueryResult

from ..bodies import QueryBody
from ..deps import Backend
from ..disconnect import until_disconnected
from .base import answers, api_router

__all__ = ["router"]

router = api_router(tags=["Query"])


@router.post("/query", **answers(QueryResult, 501))
async def query(body: QueryBody, backend: Backend, request: Request) -> dict[str, Any]:
    result = await until_disconnected(request, backend.query(body.cypher, body.params))
    return result.to_wire()
