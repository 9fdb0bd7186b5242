"""Read-only Cypher: ``POST /v1/query``.

``200 {columns, rows, stats}`` for a read; the backend raises ``InvalidInputError`` for a
write clause or Cypher it cannot run (``400``), and ``NotSupportedError`` when it lacks
``cypher_query`` (``501``) — the app's error handlers turn both into ``{"error": ...}``.
"""

from __future__ import annotations

from typing import Any

from ..bodies import QueryBody
from ..deps import Backend
from .base import api_router

__all__ = ["router"]

router = api_router(tags=["Query"])


@router.post("/query")
async def query(body: QueryBody, backend: Backend) -> dict[str, Any]:
    return (await backend.query(body.cypher, body.params)).to_wire()
