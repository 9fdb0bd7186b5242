"""Read-only Cypher: ``POST /v1/query`` (501 on a backend without ``cypher_query``)."""

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
