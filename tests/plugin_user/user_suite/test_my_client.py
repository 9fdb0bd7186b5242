"""A user's suite for "their" NAMS client (plain httpx here), with the CI fake plugged in.

It imports nothing of nams-local: the ``nams_workspace`` fixture comes from the installed
plugin, as it would in any project that adds ``nams-local`` to its test dependencies.
"""

from __future__ import annotations

from typing import Any

import httpx


def client(server: Any) -> httpx.Client:
    return httpx.Client(
        base_url=server.endpoint,
        headers={"Authorization": f"Bearer {server.api_key}"},
        timeout=30,
    )


def test_conversation_round_trip(nams_workspace: Any) -> None:
    with client(nams_workspace) as api:
        created = api.post("/conversations", json={"metadata": {"source": "e2e", "seq": 1}})
        assert created.status_code == 201, created.text
        conversation = created.json()["id"]
        added = api.post(
            f"/conversations/{conversation}/messages", json={"role": "user", "content": "hi"}
        )
        assert added.status_code == 201, added.text
        listed = api.get("/conversations").json()["conversations"]
        assert [c["id"] for c in listed] == [conversation]
        assert listed[0]["metadata"] == {"source": "e2e", "seq": 1}


def test_each_test_starts_empty(nams_workspace: Any) -> None:
    with client(nams_workspace) as api:
        assert api.get("/conversations").json()["conversations"] == []
        assert api.get("/entities").json()["entities"] == []
        api.post("/entities", json={"name": "Ada", "type": "person"}).raise_for_status()


def test_a_wrong_key_is_refused_and_env_names_the_server(nams_server: Any) -> None:
    response = httpx.get(
        f"{nams_server.endpoint}/conversations", headers={"Authorization": "Bearer nope"}
    )
    assert response.status_code == 401
    assert nams_server.env == {
        "MEMORY_ENDPOINT": nams_server.endpoint,
        "MEMORY_API_KEY": nams_server.api_key,
    }
    assert nams_server.endpoint.startswith("http://127.0.0.1:")
