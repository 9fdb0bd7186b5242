"""The five routes a chat client calls on every turn, answered without FastAPI's machinery.

Add a message, search a conversation, list conversations, get one, list its messages: in
issue 12's load mix they are every request, and py-spy put about a quarter of the event
loop's time per request in what FastAPI does around the route function — matching the
route table, the exit-stack and exception layers, solving the dependencies (``Backend``,
``Caller``, ``_single_valued_query``, the documented auth header), building a pydantic
model of the body and wrapping the answer. ``RequestGate`` already authenticated the
caller and buffered the body, so for a request of exactly the common shape this module
calls **the same route function** (``routes/conversations.py``) with the same arguments
FastAPI would build, and sends its answer through the same encoder (``strict_json``), so
the bytes on the wire are the ones FastAPI would have sent.

Everything else takes the full path, where FastAPI decides as before: another method or
path (a trailing slash, ``HEAD``), any query string but one canonical ``limit``, a body
that is not JSON (or not ``application/json``), not an object, or has a field of another
type than the plain one (``"limit": 10.0``, ``"content": 5``, a ``mode`` outside the
three, a missing field). So a request the fast path answers is one for which FastAPI's
validation could only have succeeded with the same values, and a request it does not
answer gets exactly the old treatment, 400s and their messages included. The engine's
refusals (unknown conversation, blank content, limit out of range) are raised by the same
backend call either way and answered by the same ``NamsError`` handler.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive, Scope, Send

from nams_local.backend import DEFAULT_LIST_LIMIT, DEFAULT_SEARCH_LIMIT, MemoryBackend
from nams_local.errors import NamsError

from .auth import Principal
from .bodies import AddMessageBody, SearchMessagesBody
from .errors import nams_error_response
from .large_json import parse_body
from .routes import conversations as routes
from .strict_json import answer_response
from .workspaces import WorkspacePool

__all__ = ["HotRoutes"]

#: ``{id}`` as Starlette matches it: one path segment.
_CONVERSATION = "/v1/conversations/(?P<id>[^/]+)"
#: The only query string the fast path reads: one ``limit``, written canonically (what
#: FastAPI would parse to the same integer); anything else goes the full way.
_LIMIT_QUERY = re.compile(rb"limit=(?P<limit>[1-9][0-9]{0,5})")
_JSON = b"application/json"
_MODES = ("text", "vector", "hybrid")

#: What a route needs: the path's conversation id (or ``""``), the query's limit, the
#: parsed body, the caller's backend and the caller.
Call = Callable[[str, int, dict[str, Any], MemoryBackend, Principal], Awaitable[Any]]


def _fields(body: dict[str, Any], wanted: dict[str, Field]) -> dict[str, Any]:
    """``body``'s ``wanted`` fields (``name: (default, plain)``), each present or defaulted
    and of the plain type; anything else is FastAPI's to judge (``_Fallback``)."""
    found = {name: body.get(name, default) for name, (default, _) in wanted.items()}
    if not all(plain(found[name]) for name, (_, plain) in wanted.items()):
        raise _Fallback
    return found


def _is_str(value: Any) -> bool:
    return type(value) is str


#: A field's default (``_MISSING``: required, of no plain type) and its plain type.
Field = tuple[Any, Callable[[Any], bool]]
_MISSING = object()
_ADD: dict[str, Field] = {
    "role": (_MISSING, _is_str),
    "content": (_MISSING, _is_str),
    "metadata": (None, lambda value: value is None or type(value) is dict),
}
_SEARCH: dict[str, Field] = {
    "query": (_MISSING, _is_str),
    "limit": (DEFAULT_SEARCH_LIMIT, lambda value: type(value) is int),
    "mode": (None, lambda value: value is None or (type(value) is str and value in _MODES)),
}


def _add_message(
    cid: str, _: int, body: dict[str, Any], backend: MemoryBackend, __: Principal
) -> Awaitable[Any]:
    model = AddMessageBody.model_construct(**_fields(body, _ADD))
    return routes.add_message(cid, model, backend)


def _search(
    cid: str, _: int, body: dict[str, Any], backend: MemoryBackend, __: Principal
) -> Awaitable[Any]:
    model = SearchMessagesBody.model_construct(**_fields(body, _SEARCH))
    return routes.search_messages(cid, model, backend)


def _list_conversations(
    _: str, limit: int, __: dict[str, Any], backend: MemoryBackend, caller: Principal
) -> Awaitable[Any]:
    return routes.list_conversations(backend, caller, limit, None, None)


def _get_conversation(
    cid: str, _: int, __: dict[str, Any], backend: MemoryBackend, caller: Principal
) -> Awaitable[Any]:
    return routes.get_conversation(cid, backend, caller)


def _list_messages(
    cid: str, limit: int, _: dict[str, Any], backend: MemoryBackend, __: Principal
) -> Awaitable[Any]:
    return routes.list_messages(cid, backend, limit)


class _Fallback(Exception):
    """The request is not of the plain shape: FastAPI answers it."""


@dataclass(frozen=True, slots=True)
class _Route:
    method: str
    path: re.Pattern[str]
    call: Call
    #: Whether the route reads a JSON object body (else: no body, ``limit`` may be given).
    body: bool
    status: int


_ROUTES = (
    _Route("POST", re.compile(_CONVERSATION + "/messages"), _add_message, True, 201),
    _Route("POST", re.compile(_CONVERSATION + "/search"), _search, True, 200),
    _Route("GET", re.compile("/v1/conversations"), _list_conversations, False, 200),
    _Route("GET", re.compile(_CONVERSATION), _get_conversation, False, 200),
    _Route("GET", re.compile(_CONVERSATION + "/messages"), _list_messages, False, 200),
)


class HotRoutes:
    """Answers the hot routes for ``RequestGate`` (see the module docstring)."""

    def __init__(self, pool: WorkspacePool) -> None:
        self.pool = pool

    async def answer(
        self, scope: Scope, body: bytes, caller: Principal, receive: Receive, send: Send
    ) -> bool:
        """Answer the request if it is of a hot route's plain shape; ``False``: it is not
        (nothing was sent, FastAPI must answer it)."""
        found = _match(scope)
        if found is None:
            return False
        route, cid = found
        limit = DEFAULT_LIST_LIMIT
        parsed: dict[str, Any] = {}
        query: bytes = scope.get("query_string", b"")
        if route.body:
            if query or _content_type(scope) != _JSON or not body:
                return False
            try:
                value = await parse_body(body)
            except Exception:  # malformed: FastAPI's 400 and its message
                return False
            if type(value) is not dict:
                return False
            parsed = value
        elif query:
            given = _LIMIT_QUERY.fullmatch(query)
            if given is None:
                return False
            limit = int(given["limit"])
        try:
            call = route.call(cid, limit, parsed, await self.pool.get(caller.workspace), caller)
        except _Fallback:
            return False
        try:
            response = answer_response(await call, route.status)
        except NamsError as error:
            response = nams_error_response(error)
        await response(scope, receive, send)
        return True


def _match(scope: Scope) -> tuple[_Route, str] | None:
    method, path = scope["method"], scope["path"]
    if scope.get("root_path"):
        return None
    for route in _ROUTES:
        if route.method == method:
            found = route.path.fullmatch(path)
            if found is not None:
                return route, found.groupdict().get("id") or ""
    return None


def _content_type(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return bytes(value)
    return None
