"""A TCK-style bridge caller and checks of the wire shapes the TCK client parses.

The checks follow the contract's type tables: ids are UUIDs, timestamps are aware UTC with
an explicit ``+00:00`` (never ``Z``) and 0, 3 or 6 fractional digits, collections and maps
are never ``null``, tool calls always carry ``status``, integers are integers.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx

__all__ = [
    "UNKNOWN_ID",
    "Bridge",
    "check_conversation",
    "check_entity",
    "check_message",
    "check_timestamp",
    "check_trace",
    "is_uuid",
]

#: A well-formed id that no store holds.
UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"

_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6})?\+00:00$")
_STATUSES = {"pending", "success", "failure", "error", "timeout", "cancelled"}


class Bridge:
    """Calls ``POST /bridge/{method}`` with a flat JSON body, like the TCK's bridge client."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def post(self, method: str, /, **body: Any) -> httpx.Response:
        return await self.http.post(f"/bridge/{method}", json=body)

    async def ok(self, method: str, /, **body: Any) -> Any:
        """The JSON of a 200 reply (fails on any other status)."""
        response = await self.post(method, **body)
        assert response.status_code == 200, (method, response.status_code, response.text)
        assert response.headers["content-type"].startswith("application/json")
        return response.json()

    async def void(self, method: str, /, **body: Any) -> None:
        response = await self.post(method, **body)
        assert response.status_code == 204, (method, response.status_code, response.text)
        assert response.content == b""

    async def error(self, method: str, status: int, /, **body: Any) -> str:
        """The ``error`` message of a reply with ``status``."""
        response = await self.post(method, **body)
        assert response.status_code == status, (method, response.status_code, response.text)
        payload = response.json()
        assert isinstance(payload, dict) and isinstance(payload["error"], str), payload
        return str(payload["error"])


def is_uuid(value: Any) -> bool:
    try:
        return isinstance(value, str) and str(uuid.UUID(value)) == value
    except ValueError:
        return False


def check_timestamp(value: Any, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    assert isinstance(value, str) and _STAMP.match(value), value


def _check_keys(obj: Any, required: dict[str, type | tuple[type, ...]]) -> None:
    assert isinstance(obj, dict), obj
    for key, kind in required.items():
        assert key in obj, (key, obj)
        assert isinstance(obj[key], kind), (key, obj[key])


def check_message(m: Any) -> None:
    _check_keys(m, {"id": str, "role": str, "content": str, "metadata": dict})
    assert is_uuid(m["id"]) and m["role"] in {"user", "assistant", "system"}
    check_timestamp(m["timestamp"])


def check_conversation(c: Any) -> None:
    _check_keys(c, {"id": str, "session_id": str, "messages": list})
    assert is_uuid(c["id"])
    check_timestamp(c["created_at"])
    check_timestamp(c.get("updated_at"), optional=True)
    for m in c["messages"]:
        check_message(m)


def check_entity(e: Any) -> None:
    _check_keys(e, {"id": str, "name": str, "type": str})
    assert is_uuid(e["id"])
    check_timestamp(e["created_at"])


def _check_tool_call(c: Any) -> None:
    _check_keys(c, {"id": str, "tool_name": str, "arguments": dict, "status": str})
    assert is_uuid(c["id"]) and c["status"] in _STATUSES
    assert c.get("duration_ms") is None or type(c["duration_ms"]) is int


def check_trace(t: Any) -> None:
    _check_keys(t, {"id": str, "session_id": str, "task": str, "steps": list})
    assert is_uuid(t["id"])
    assert t.get("success") in (None, True, False)
    check_timestamp(t["started_at"])
    check_timestamp(t.get("completed_at"), optional=True)
    numbers = [s["step_number"] for s in t["steps"]]
    assert numbers == sorted(numbers)
    for s in t["steps"]:
        _check_keys(s, {"id": str, "trace_id": str, "step_number": int, "tool_calls": list})
        assert s["trace_id"] == t["id"]
        for c in s["tool_calls"]:
            _check_tool_call(c)


def check_tool_call(c: Any) -> None:
    _check_tool_call(c)
