"""``GET /healthz``: liveness without credentials, for process managers and test harnesses."""

from __future__ import annotations

import os
from typing import Any

from fastapi import APIRouter

from nams_local.__version__ import __version__

from ..responses import HealthResponse
from ..runtime import running_loop

__all__ = ["router"]

router = APIRouter(tags=["System"])


@router.get("/healthz", response_model=None, responses={200: {"model": HealthResponse}})
async def healthz() -> dict[str, Any]:
    """``pid`` names the process that answered: with ``serve --workers N`` a client (or a
    test) can tell which worker a connection reached. A pid is no secret (the ready file
    publishes the supervisor's). ``loop`` names the event loop that runs (``"uvloop"`` or
    ``"asyncio"``): a slow fallback shows instead of hiding."""
    return {"status": "ok", "version": __version__, "pid": os.getpid(), "loop": running_loop()}
