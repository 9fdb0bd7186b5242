"""The real server app driven in process: its lifespan running, a client (raw ``httpx`` or
the hosted REST client) over ``httpx.ASGITransport``: no socket, no port.

One helper instead of a copy per suite, so every in-process client starts and stops the app
the way ``nams-local serve`` does (startup before the first request, shutdown after the
last one).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI

from backends.hosted import HostedBackend

__all__ = ["BASE_URL", "asgi_hosted", "hosted_in_process", "in_process"]

#: The base URL of an in-process app: never resolved, the transport carries the request.
BASE_URL = "http://nams.test"


@asynccontextmanager
async def in_process(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """``app`` with its lifespan entered, and a client talking to it at ``BASE_URL``."""
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client,
    ):
        yield client


def asgi_hosted(app: FastAPI, api_key: str, **options: Any) -> HostedBackend:
    """The hosted REST client talking to ``app`` in process (whose lifespan the caller runs)."""
    transport = httpx.ASGITransport(app=app)
    return HostedBackend(api_key, endpoint=f"{BASE_URL}/v1", transport=transport, **options)


@asynccontextmanager
async def hosted_in_process(
    app: FastAPI, api_key: str, **options: Any
) -> AsyncIterator[HostedBackend]:
    """``app`` with its lifespan entered, and the hosted client talking to it."""
    async with app.router.lifespan_context(app), asgi_hosted(app, api_key, **options) as client:
        yield client
