"""``serve`` as a CI fake: ``--port 0`` with ``--ready-file``, and the opt-in reset route."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import HashingEmbedder
from nams_local.server import create_app
from tests.asgi import in_process

from .processes import serve_process
from .support import Api, assert_error, bearer


def test_ready_file_names_the_bound_endpoint_and_goes_away(tmp_path: Path) -> None:
    ready = tmp_path / "out" / "ready.json"
    ready.parent.mkdir()
    ready.write_text('{"endpoint": "http://127.0.0.1:1/v1"}')  # stale, from an earlier run
    args = ["--port", "0", "--db", str(tmp_path / "r.db"), "--no-embeddings"]
    args += ["--ready-file", str(ready), "--allow-reset", "--api-key", "ci-key"]
    with serve_process(args, tmp_path) as served:
        written = json.loads(ready.read_text())
        assert written["endpoint"] == served.base_url + "/v1"
        assert written["baseUrl"] == served.base_url
        assert written["port"] == int(served.base_url.rsplit(":", 1)[1]) != 0
        assert written["pid"] == served.process.pid
        with httpx.Client(base_url=written["endpoint"], headers=bearer("ci-key")) as http:
            assert http.post("/conversations").status_code == 201
            assert http.post("/testing/reset").json() == {"status": "reset"}
            assert http.get("/conversations").json()["conversations"] == []
        assert served.stop(signal.SIGTERM) == 0
    assert not ready.exists()


async def test_reset_route_exists_only_when_allowed(tmp_path: Path) -> None:
    root = SQLiteBackend(":memory:", embedder=HashingEmbedder())
    try:
        async with in_process(create_app(root)) as http:
            assert_error(await http.post("/v1/testing/reset", headers=bearer("t")), 404)
            document = (await http.get("/openapi.json")).json()
            assert "/v1/testing/reset" not in document["paths"]
    finally:
        await root.aclose()


async def test_reset_empties_only_the_callers_workspace(tmp_path: Path) -> None:
    root = SQLiteBackend(":memory:", embedder=HashingEmbedder())
    try:
        async with in_process(create_app(root, allow_reset=True)) as http:
            alice, bob = Api(http, "alice"), Api(http, "bob")
            for api in (alice, bob):
                conversation = (await api.ok("POST", "/v1/conversations", 201))["id"]
                await api.ok(
                    "POST",
                    f"/v1/conversations/{conversation}/messages",
                    201,
                    json={"role": "user", "content": "Ada lives in London"},
                )
                await api.ok("POST", "/v1/entities", 201, json={"name": "Ada", "type": "person"})

            bobs = [await bob.ok("GET", path) for path in ("/v1/conversations", "/v1/entities")]

            assert await alice.ok("POST", "/v1/testing/reset") == {"status": "reset"}

            assert (await alice.ok("GET", "/v1/conversations"))["conversations"] == []
            assert (await alice.ok("GET", "/v1/entities"))["entities"] == []
            assert [await bob.ok("GET", p) for p in ("/v1/conversations", "/v1/entities")] == bobs
            assert len(bobs[0]["conversations"]) == 1 and bobs[1]["entities"]
            assert_error(await http.post("/v1/testing/reset"), 401)
            document = (await http.get("/openapi.json")).json()
            assert document["paths"]["/v1/testing/reset"]["post"]["x-nams-local-extension"]
    finally:
        await root.aclose()
