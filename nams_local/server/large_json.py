"""Big JSON bodies are parsed and encoded on a thread, not on the event loop.

One event loop serves every tenant of a ``serve`` process. Decoding a request body of
almost a megabyte (a bulk of long messages) or encoding an answer of a few megabytes (a
search at limit 200 over long messages) is pure Python that holds the loop for tens of
milliseconds, and every other tenant's request waits that long, however small. On a thread
the work still needs the GIL, but the interpreter hands the GIL over every few milliseconds
(``sys.getswitchinterval``), so the loop keeps answering the others while one tenant's big
body is worked on (issue 12's adversarial load). Small bodies stay inline: a thread hop
costs more than encoding them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.responses import Response

from nams_local.strict_json import parse_strict_json

__all__ = ["LARGE_BYTES", "LARGE_CHARS", "encode_answer", "parse_body", "wire_json"]

#: A request body of more bytes is parsed on a thread.
LARGE_BYTES = 64 * 1024
#: An answer whose texts hold more characters than this is encoded on a thread.
LARGE_CHARS = 64 * 1024


async def parse_body(body: bytes) -> Any:
    """``parse_strict_json(body)``, on a thread when the body is large."""
    if len(body) > LARGE_BYTES:
        return await asyncio.to_thread(parse_strict_json, body)
    return parse_strict_json(body)


def _encode(payload: Any) -> bytes:
    # Exactly what starlette's JSONResponse renders.
    return json.dumps(
        payload, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode("utf-8")


def encode_answer(payload: Any) -> bytes:
    """The bytes FastAPI would send for a route's plain return value, without its walk.

    FastAPI passes a returned ``dict`` through ``jsonable_encoder`` (a recursive copy in
    Python) before ``JSONResponse`` dumps it; the routes already return plain JSON values
    (``to_wire()``), for which that walk changes nothing, and it was about a tenth of a
    request's event-loop CPU. So the payload is dumped directly, and only a value
    ``json.dumps`` cannot take (a datetime, a model: ``TypeError``) goes through
    ``jsonable_encoder`` first, as before. Either way the bytes are the old ones
    (``tests/server/test_answer_bytes.py`` holds them together).
    """
    try:
        return _encode(payload)
    except TypeError:
        from fastapi.encoders import jsonable_encoder

        return _encode(jsonable_encoder(payload))


async def wire_json(
    payload: dict[str, Any], chars: int, status_code: int = 200
) -> dict[str, Any] | Response:
    """The answer ``payload`` (plain JSON values), whose texts hold ``chars`` characters:
    returned as is for FastAPI to encode when small, else encoded on a thread into a ready
    ``Response``. Either way the client gets the same bytes."""
    if chars <= LARGE_CHARS:
        return payload
    body = await asyncio.to_thread(_encode, payload)
    return Response(body, status_code=status_code, media_type="application/json")
