"""The TCK bridge as an ASGI app: ``POST /{method}`` with a flat JSON body, one per method.

Mounted at ``/bridge`` by ``nams_local.server.create_app(bridge=...)`` (``nams-local serve
--bridge``), or served on its own. It has no authentication — the TCK clients send none —
so it is safe only because of how it is opened: off unless asked for, on a loopback address
(``serve`` refuses any other), and over its **own** store (``open_bridge_backend``: by
default a ``:memory:`` database), so ``clear_all_data`` cannot reach real memory.

Status conventions (the contract's §1.3–1.4): 200 with JSON (``null`` for a missing
optional result), 204 for the void methods, ``{"error": ...}`` with 400 for bad input, 404
for an unknown method or id, 405 for a verb other than POST, and 500 (logged, short message)
for anything unexpected.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from nams_local.errors import (
    BackendUnavailableError,
    InvalidInputError,
    NamsError,
    NotFoundError,
    NotSupportedError,
)
from nams_local.strict_json import parse_strict_json

from . import long_term, platinum, reasoning, short_term  # noqa: F401  (registers methods)
from .backend import BridgeBackend
from .registry import METHODS, NO_CONTENT, Bridge

__all__ = ["create_bridge_app"]

logger = logging.getLogger("nams_local.bridge")

_ALL_VERBS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(x) for x in err["loc"]) or "body"
        parts.append(f"{where}: {err['msg']}")
    return "invalid request: " + "; ".join(parts)


def _parse(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object; an empty body counts as ``{}``. Parsed like the server's
    bodies (``parse_strict_json``): deep nesting, ``NaN``/``Infinity`` and lone surrogates
    are a 400 here, before a handler fails on them midway (a 500)."""
    if not raw.strip():
        return {}
    try:
        data = parse_strict_json(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"malformed JSON body: {exc.msg}") from None
    if not isinstance(data, dict):
        raise InvalidInputError("the body must be a JSON object")
    return data


def _reply(value: Any) -> Response:
    if value is NO_CONTENT:
        return Response(status_code=204)
    body = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return Response(body, status_code=200, media_type="application/json")


def create_bridge_app(backend: BridgeBackend) -> Starlette:
    """The bridge over ``backend`` (the caller owns it and closes it)."""
    bridge = Bridge(backend)

    async def dispatch(request: Request) -> Response:
        name = request.path_params["name"]
        method = METHODS.get(name) if "/" not in name else None
        if method is None:
            return _error(404, f"Unknown method: {name}")
        if request.method != "POST":
            return _error(405, "use POST", {"Allow": "POST"})
        try:
            body = method.body.model_validate(_parse(await request.body()))
            return _reply(await method.handler(bridge, body))
        except ValidationError as exc:
            return _error(400, _validation_message(exc))
        except (InvalidInputError, NotSupportedError) as exc:
            return _error(400, exc.message)
        except NotFoundError as exc:
            return _error(404, exc.message)
        except BackendUnavailableError as exc:
            return _error(503, exc.message)
        except NamsError as exc:
            return _error(400, exc.message)
        except Exception:
            logger.exception("bridge method %s failed", name)
            return _error(500, f"internal error in {name}")

    return Starlette(routes=[Route("/{name:path}", dispatch, methods=_ALL_VERBS)])
