"""Answers are encoded once (``large_json.encode_answer``) with the bytes FastAPI sent.

Before, a route's ``dict`` went through ``jsonable_encoder`` and then ``JSONResponse``;
now it is dumped directly. Each answer here is compared with what that old pipeline makes
of the same JSON value, so a formatting change (a float, an escape, a separator) fails.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
from typing import Any

import httpx
import pytest
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

from nams_local.server.large_json import encode_answer

from .support import Api


def _old_bytes(value: Any) -> bytes:
    """What FastAPI sent for a plain return value: ``jsonable_encoder``, then JSONResponse."""
    return bytes(JSONResponse(jsonable_encoder(value)).body)


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


TRICKY: list[Any] = [
    {"text": 'naïve — 東京 \u2028 \x00 "quoted" \\ /', "emoji": "🦙"},
    {"floats": [0.1, 1e16, 1e-7, -0.0, 123456789.123456789, 2.5e-320], "big": 2**70},
    {"nested": {"a": [1, {"b": None}, True, False]}, "empty": {}, "list": []},
    {1: "int key", None: "none key", 2.5: "float key", False: "bool key"},
    [("tuple", 1), ["list", 2]],
    {"when": dt.datetime(2026, 12, 1, 20, 0, tzinfo=dt.UTC), "day": dt.date(2026, 12, 1)},
    {"enum": Colour.RED, "int_enum": Level.HIGH, "set": frozenset({"x"})},
]


@pytest.mark.parametrize("value", TRICKY, ids=range(len(TRICKY)))
def test_encode_answer_gives_the_old_bytes(value: Any) -> None:
    assert encode_answer(value) == _old_bytes(value)


def test_what_json_cannot_hold_still_fails() -> None:
    with pytest.raises(ValueError):
        encode_answer({"x": float("nan")})


def _check(response: httpx.Response) -> Any:
    assert response.is_success, response.text
    assert response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)
    value = response.json()
    assert response.content == _old_bytes(value)
    return value


async def test_route_answers_are_byte_identical_to_the_old_encoder(alice: Api) -> None:
    metadata = {"city": "Zürich", "score": 0.1, "huge": 1e16, "count": 2**53 + 1, "ok": True}
    conv = _check(
        await alice.post("/v1/conversations", json={"userId": "ü-1", "metadata": metadata})
    )
    cid = conv["id"]
    _check(
        await alice.post(
            f"/v1/conversations/{cid}/messages",
            json={"role": "user", "content": "I moved to Lima — 東京 next", "metadata": metadata},
        )
    )
    bulk = [{"role": "assistant", "content": f'noted, step {i} "quoted"'} for i in range(3)]
    _check(await alice.post(f"/v1/conversations/{cid}/messages/bulk", json={"messages": bulk}))
    for path in (
        "/v1/conversations",
        f"/v1/conversations/{cid}",
        f"/v1/conversations/{cid}/messages",
        f"/v1/conversations/{cid}/context",
        f"/v1/conversations/{cid}/extraction-status",
        "/v1/capabilities",
    ):
        _check(await alice.get(path))
    found = _check(
        await alice.post(f"/v1/conversations/{cid}/search", json={"query": "Lima", "limit": 5})
    )
    assert found["messages"], found
    entity = _check(await alice.post("/v1/entities", json={"name": "Lima", "type": "place"}))
    _check(await alice.get(f"/v1/entities/{entity['id']}"))
    _check(await alice.post("/v1/entities/search", json={"query": "Lima"}))


async def test_created_answers_keep_their_status(alice: Api) -> None:
    response = await alice.post("/v1/conversations", json={})
    assert response.status_code == 201
    assert json.loads(response.content)["id"]
