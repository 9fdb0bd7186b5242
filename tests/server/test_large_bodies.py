"""Big bodies go through a thread (``nams_local/server/large_json.py``) and come out the
same: a bulk near the body limit answers 201 with FastAPI's exact encoding, its messages
are found by text search right after the ack (their full-text entries are deferred,
``deferred_fts.py``), and a big malformed body is still a 400 ``{"error"}``."""

from __future__ import annotations

import json

from nams_local.server.large_json import LARGE_BYTES, LARGE_CHARS

from .support import Api, assert_error

BULK = 100
CHARS = 9_000


def compact(value: object) -> str:
    """What starlette's JSONResponse renders for ``value``."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


async def test_a_near_limit_bulk_answers_exactly_and_is_found_at_once(alice: Api) -> None:
    conv = await alice.ok("POST", "/v1/conversations", 201, json={"userId": "u"})
    messages = [
        {"role": "user", "content": f"token{i:03d}q café ☕ " + "x " * (CHARS // 2 - 12)}
        for i in range(BULK)
    ]
    assert sum(len(m["content"]) for m in messages) > LARGE_CHARS
    response = await alice.post(
        f"/v1/conversations/{conv['id']}/messages/bulk", json={"messages": messages}
    )
    assert response.status_code == 201
    assert response.headers["content-type"] == "application/json"
    answer = response.json()
    assert response.text == compact(answer)
    assert [m["content"] for m in answer["messages"]] == [m["content"] for m in messages]
    for i in (0, BULK - 1):
        found = await alice.ok(
            "POST", f"/v1/conversations/{conv['id']}/search", json={"query": f"token{i:03d}q"}
        )
        assert [m["content"][:9] for m in found["messages"]] == [f"token{i:03d}q"]
    listed = await alice.get(f"/v1/conversations/{conv['id']}/messages", params={"limit": 200})
    assert listed.status_code == 200
    assert listed.text == compact(listed.json())
    assert len(listed.json()["messages"]) == BULK


async def test_a_big_malformed_body_is_a_400(alice: Api) -> None:
    conv = await alice.ok("POST", "/v1/conversations", 201, json={})
    body = '{"messages": [{"role": "user", "content": "' + "a" * LARGE_BYTES + '", "x": NaN}]}'
    response = await alice.post(
        f"/v1/conversations/{conv['id']}/messages/bulk",
        content=body.encode(),
        headers={"content-type": "application/json"},
    )
    assert_error(response, 400)
    listed = await alice.ok("GET", f"/v1/conversations/{conv['id']}/messages")
    assert listed["messages"] == []
