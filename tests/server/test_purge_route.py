"""``POST /v1/users/{userId}/purge`` over real HTTP (uvicorn on a loopback port): the
caller's workspace only, authenticated, bounded, and the file compacted."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import httpx

from backends.sqlite import SQLiteBackend
from nams_local.purge_report import MAX_USER_ID_CHARS
from nams_local.server import create_app
from tests.purge_seed import files_holding

from .support import Api, assert_error, live_server

USER = "alice-zebrafish7731"


async def _seed(api: Api, text: str) -> str:
    conv = await api.ok("POST", "/v1/conversations", 201, json={"userId": USER})
    await api.ok(
        "POST",
        f"/v1/conversations/{conv['id']}/messages",
        201,
        json={"role": "user", "content": text},
    )
    return str(conv["id"])


async def _listed(api: Api) -> list[str]:
    body = await api.ok("GET", "/v1/conversations", params={"user_id": USER})
    return [c["id"] for c in body["conversations"]]


async def test_purge_route_over_http(tmp_path: Path) -> None:
    db = tmp_path / "served.db"
    root = SQLiteBackend(db, embeddings=False, extraction="sync")
    try:
        with live_server(create_app(root)) as base_url:
            async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
                mine, theirs = Api(client, "alice-token"), Api(client, "other-token")
                await _seed(mine, "I work at Zebrafish7731corp.")
                kept = await _seed(theirs, "the same user id, another workspace: otter5512")
                assert files_holding(db, "zebrafish7731corp")

                path = f"/v1/users/{quote(USER, safe='')}/purge"
                assert_error(await client.post(path), 401)
                too_long = f"/v1/users/{'x' * (MAX_USER_ID_CHARS + 1)}/purge"
                assert "too long" in assert_error(await mine.post(too_long), 400)

                report = await mine.ok("POST", path)
                assert report["userId"] == USER and report["complete"] is True
                assert report["deleted"]["conversations"] == 1
                assert report["deleted"]["messages"] == 1
                assert report["compacted"] is True and report["notDeleted"] == []
                assert await _listed(mine) == []
                assert await _listed(theirs) == [kept]  # one key cannot purge another's user
                assert files_holding(db, "zebrafish7731corp") == []
                assert files_holding(db, "otter5512")

                odd = "team/ålice 7"  # a slash, a space, a non-ASCII letter
                conv = await mine.ok("POST", "/v1/conversations", 201, json={"userId": odd})
                purged = await mine.ok("POST", f"/v1/users/{quote(odd, safe='')}/purge")
                assert purged["userId"] == odd and purged["deleted"]["conversations"] == 1
                assert_error(await mine.get(f"/v1/conversations/{conv['id']}"), 404)
                empty = await mine.post("/v1/users//purge")
                assert "user_id is required" in assert_error(empty, 400)

                document = (await client.get("/openapi.json")).json()
                operation = document["paths"]["/v1/users/{userId}/purge"]["post"]
                assert operation["x-nams-local-extension"] is True
                capabilities = await mine.ok("GET", "/v1/capabilities")
                assert capabilities["userPurge"] is True
    finally:
        await root.aclose()
