"""An unexpected exception in a ``/ui`` handler is an HTML 500 page (escaped, no
traceback, logged), on a connection that stays usable, while ``/v1`` keeps its JSON 500;
and the delete-message action runs over the hosted client where the server advertises it."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local.inspector import Gate, OpenedWorkspace, create_inspector
from nams_local.models import Entity
from nams_local.server import create_app
from tests.server.support import live_server

from .pages import login

SECRET = "<script>boom-7731</script>"


async def _exploding(*args: Any, **kwargs: Any) -> list[Entity]:
    """The engine's entity listing failing as a bug would (not a ``NamsError``)."""
    raise RuntimeError(SECRET)


async def test_ui_handler_failure_is_an_html_500_and_v1_stays_json(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SQLiteBackend(":memory:", embeddings=False) as root:
        with live_server(create_app(root)) as base_url:
            async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
                ui = await login(http, "alice-token")
                # Every workspace view of the store is a ``SQLiteBackend``: patch the class.
                monkeypatch.setattr(SQLiteBackend, "list_entities", _exploding)
                with caplog.at_level(logging.ERROR):
                    failed = await ui.get("/entities")
                assert failed.status_code == 500
                assert failed.headers["content-type"].startswith("text/html")
                assert "internal error" in failed.text and "<h1>500</h1>" in failed.text
                assert "boom-7731" not in failed.text and "Traceback" not in failed.text
                assert "default-src 'none'" in failed.headers["content-security-policy"]
                assert any("/ui/entities" in r.getMessage() for r in caplog.records)
                # The same keep-alive connection answers the next request.
                assert (await ui.get("/users")).status_code == 200
                api = await http.get(
                    "/v1/entities", headers={"Authorization": "Bearer alice-token"}
                )
                assert api.status_code == 500 and api.json() == {"error": "internal error"}
                assert (await ui.get("/users")).status_code == 200


class HostedGate(Gate):
    """Opens every session on the hosted client against a real server, probed once, as a
    gate over a remote NAMS would."""

    def __init__(self, client: HostedBackend) -> None:
        self.client = client

    async def open(self, token: str, workspace_header: str | None) -> OpenedWorkspace:
        await self.client.probe_capabilities()
        return OpenedWorkspace("remote", self.client)


async def test_inspector_deletes_a_message_through_the_hosted_client() -> None:
    async with SQLiteBackend(":memory:", embeddings=False) as root:
        with live_server(create_app(root, ui=False)) as base_url:
            async with HostedBackend(
                api_key="alice-token", endpoint=f"{base_url}/v1", max_retries=0
            ) as client:
                conversation = await client.create_conversation()
                keep = await client.add_message(conversation.id, "user", "keep this one")
                gone = await client.add_message(conversation.id, "user", "forget this one")
                outer = Starlette(routes=[Mount("/ui", create_inspector(HostedGate(client)))])
                transport = httpx.ASGITransport(app=outer)
                async with httpx.AsyncClient(transport=transport, base_url="http://ui") as http:
                    ui = await login(http, "anything")
                    page = await ui.get(f"/conversations/{conversation.id}")
                    assert "Delete message" in page.text
                    fields = {"conversation_id": conversation.id, "message_id": gone.id}
                    done = await ui.act("delete-message", fields, confirm=True)
                    assert done.status_code == 200 and "What changed" in done.text
                listed = await client.list_messages(conversation.id)
                assert [m.id for m in listed] == [keep.id]
