"""The inspector's pages and actions in process: login, reads, CSRF, confirm, bounds,
workspaces, ``ui=False``, package data. The real browser is ``test_browser.py``."""

from __future__ import annotations

import html
from collections.abc import AsyncIterator
from importlib.resources import files

import httpx
import pytest
from fastapi import FastAPI

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local.server import create_app
from tests.asgi import BASE_URL, asgi_hosted

from .pages import Browserless, login
from .seed import XSS_ENTITY, XSS_MESSAGE, Seeded, entity_named, seed

TOKEN = "alice-token"


@pytest.fixture
async def api(app: FastAPI, http: httpx.AsyncClient) -> AsyncIterator[HostedBackend]:
    """The hosted client on ``TOKEN`` (``http`` keeps the app's lifespan running)."""
    async with asgi_hosted(app, TOKEN, max_retries=0) as client:
        yield client


@pytest.fixture
async def seeded(api: HostedBackend) -> Seeded:
    return await seed(api)


@pytest.fixture
async def ui(http: httpx.AsyncClient, seeded: Seeded) -> Browserless:
    return await login(http, TOKEN)


def test_templates_and_assets_ship_as_package_data() -> None:
    package = files("nams_local.inspector")
    for name in ("base.html", "entity.html", "conversation.html", "login.html", "confirm.html"):
        assert (package / "templates" / name).is_file(), name
    assert "svg.picture" in (package / "static" / "inspector.css").read_text()


async def test_without_a_session_every_page_asks_to_log_in(http: httpx.AsyncClient) -> None:
    for path in ("/ui/", "/ui/entities", "/ui/users", "/ui/graph"):
        page = await http.get(path)
        assert page.status_code == 200 and 'name="token"' in page.text, path
    refused = await http.post("/ui/actions/delete-entity", data={"entity_id": "x"})
    assert refused.status_code == 401 and 'name="token"' in refused.text


async def test_login_checks_the_token_like_v1(root: SQLiteBackend) -> None:
    app = create_app(root, api_keys=["good-key"])
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as http,
    ):
        form = await http.get("/ui/login")
        nonce = form.text.split('name="nonce" value="')[1].split('"')[0]
        bad = await http.post("/ui/login", data={"nonce": nonce, "token": "wrong"})
        assert bad.status_code == 401 and "invalid API key" in bad.text
        assert "nams_ui_session" not in http.cookies
        ui = await login(http, "good-key")
        assert "Log out" in (await ui.get("/")).text


async def test_login_refuses_a_form_without_its_cookie(http: httpx.AsyncClient) -> None:
    forged = await http.post("/ui/login", data={"nonce": "made-up", "token": TOKEN})
    assert forged.status_code == 403
    assert "nams_ui_session" not in http.cookies


async def test_session_cookie_is_httponly_and_strict(http: httpx.AsyncClient) -> None:
    form = await http.get("/ui/login")
    nonce = form.text.split('name="nonce" value="')[1].split('"')[0]
    done = await http.post("/ui/login", data={"nonce": nonce, "token": TOKEN})
    cookie = done.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
    assert TOKEN not in done.headers["set-cookie"]


async def test_pages_show_the_seeded_memory(ui: Browserless, seeded: Seeded) -> None:
    home = await ui.get("/")
    assert "organization" in home.text and "person" in home.text
    users = await ui.get("/users")
    assert "alice" in users.text and seeded.conversation_id in users.text
    conversation = await ui.get(f"/conversations/{seeded.conversation_id}")
    text = conversation.text
    assert text.index("Alice Smith. I work") < text.index("Bob Jones works")
    assert "search_company" in text and "company_lookup" in text and "12 ms" in text
    assert "WORKS_AT" in text  # a relationship learned from the first message
    entities = await ui.get("/entities?type=organization")
    assert "Acme Corp" in entities.text and "Berlin" not in entities.text
    found = await ui.get("/entities?q=Berlin")
    assert "Berlin" in found.text and "Bob Jones" not in found.text


async def test_entity_page_answers_why_and_since_when(
    ui: Browserless, api: HostedBackend, seeded: Seeded
) -> None:
    alice = await entity_named(api, "Alice Smith")
    page = await ui.get(f"/entities/{alice.id}")
    assert page.status_code == 200
    link = f"/ui/conversations/{seeded.conversation_id}#m-{seeded.first_message_id}"
    assert link in page.text  # provenance: the message it came from
    assert "WORKS_AT" in page.text and "<svg" in page.text
    current, past = page.text.split("In the past")
    assert "Potsdam" in current.split("Relationships")[1] and "Berlin" in past.split("</table>")[0]
    assert "– 2026-" in past.split("</table>")[0]  # the interval it held
    acme = await entity_named(api, "Acme Corp")
    assert f"/ui/entities/{acme.id}" in page.text  # the picture's node links


async def test_stored_markup_is_escaped(ui: Browserless, seeded: Seeded) -> None:
    conversation = await ui.get(f"/conversations/{seeded.conversation_id}")
    assert XSS_MESSAGE not in conversation.text
    assert html.escape(XSS_MESSAGE, quote=False) in conversation.text.replace("&#39;", "'")
    entity = await ui.get(f"/entities/{seeded.xss_entity_id}")
    assert XSS_ENTITY not in entity.text and "<script>" not in entity.text
    assert "script-src" not in entity.headers["content-security-policy"]
    assert "default-src 'none'" in entity.headers["content-security-policy"]


async def test_an_action_asks_first_then_changes(ui: Browserless, api: HostedBackend) -> None:
    bob = await entity_named(api, "Bob Jones")
    asked = await ui.act("delete-entity", {"entity_id": bob.id}, confirm=False)
    assert asked.status_code == 200 and "Nothing has changed yet" in asked.text
    assert (await api.get_entity(bob.id)).name == "Bob Jones"
    done = await ui.act("delete-entity", {"entity_id": bob.id}, confirm=True)
    assert done.status_code == 200 and "What changed" in done.text and "deleted" in done.text
    assert "Bob Jones" not in [e.name for e in await api.list_entities()]


async def test_an_action_without_the_csrf_token_is_refused(
    ui: Browserless, api: HostedBackend
) -> None:
    bob = await entity_named(api, "Bob Jones")
    for csrf in ("", "forged", ui.csrf[:-1]):
        refused = await ui.http.post(
            "/ui/actions/delete-entity", data={"csrf": csrf, "entity_id": bob.id, "confirm": "yes"}
        )
        assert refused.status_code == 403, csrf
    cross_site = await ui.http.post(
        "/ui/actions/delete-entity",
        data={"csrf": ui.csrf, "entity_id": bob.id, "confirm": "yes"},
        headers={"Origin": "http://evil.example"},
    )
    assert cross_site.status_code == 403
    assert (await api.get_entity(bob.id)).name == "Bob Jones"


async def test_correct_renames_and_retypes_through_the_api(
    ui: Browserless, api: HostedBackend
) -> None:
    berlin = await entity_named(api, "Berlin")
    fields = {
        "entity_id": berlin.id,
        "name": "Berlin, Germany",
        "type": "city",
        "description": "capital",
    }
    asked = await ui.act("correct", fields, confirm=False)
    assert "Berlin, Germany" in asked.text and (await api.get_entity(berlin.id)).name == "Berlin"
    done = await ui.act("correct", fields, confirm=True)
    assert done.status_code == 200, done.text
    now = await entity_named(api, "Berlin, Germany")
    assert now.type == "city" and now.description == "capital"
    details = await api.get_entity(now.id)
    assert {r.type for r in details.relationships} >= {"LIVES_IN", "SAME_AS"}


async def test_feedback_and_merge(ui: Browserless, api: HostedBackend) -> None:
    corp = await entity_named(api, "Acme Corporation")
    acme = await entity_named(api, "Acme Corp")
    feedback = {"entity_id": acme.id, "user_score": "0.9", "confirmed_fact": "yes"}
    assert (await ui.act("feedback", feedback, confirm=True)).status_code == 200
    merge = {"source_id": corp.id, "target_id": acme.id}
    assert "Nothing has changed yet" in (await ui.act("merge", merge, confirm=False)).text
    assert (await ui.act("merge", merge, confirm=True)).status_code == 200
    names = [e.name for e in await api.list_entities()]
    assert "Acme Corporation" not in names and "Acme Corp" in names
    page = await ui.get(f"/entities/{acme.id}")
    assert "was merged into this" in page.text and "Acme Corporation" in page.text


async def test_delete_relationship_and_conversation(
    ui: Browserless, api: HostedBackend, seeded: Seeded
) -> None:
    alice = await entity_named(api, "Alice Smith")
    rel = next(r for r in (await api.get_entity(alice.id)).relationships if r.type == "WORKS_AT")
    assert rel.id is not None
    fields = {"entity_id": alice.id, "relationship_id": rel.id}
    asked = await ui.act("delete-relationship", fields, confirm=False)
    assert "Alice Smith —WORKS_AT→ Acme Corp" in asked.text
    assert (await ui.act("delete-relationship", fields, confirm=True)).status_code == 200
    assert "WORKS_AT" not in {r.type for r in (await api.get_entity(alice.id)).relationships}
    conversation = {"conversation_id": seeded.conversation_id}
    assert (await ui.act("delete-conversation", conversation, confirm=True)).status_code == 200
    assert seeded.conversation_id not in [c.id for c in await api.list_conversations()]


async def test_another_token_cannot_see_or_change_the_workspace(
    app: FastAPI, api: HostedBackend, seeded: Seeded
) -> None:
    alice = await entity_named(api, "Alice Smith")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url=BASE_URL
    ) as other_http:
        mallory = await login(other_http, "mallory-token")
        assert (await mallory.get(f"/entities/{alice.id}")).status_code == 404
        assert (await mallory.get(f"/conversations/{seeded.conversation_id}")).status_code == 404
        assert "Alice Smith" not in (await mallory.get("/entities")).text
        assert "Alice" not in (await mallory.get("/graph")).text
        for action, fields in [
            ("delete-entity", {"entity_id": alice.id}),
            ("correct", {"entity_id": alice.id, "name": "X", "type": "person"}),
            ("delete-conversation", {"conversation_id": seeded.conversation_id}),
        ]:
            refused = await mallory.act(action, fields, confirm=True)
            assert refused.status_code == 404, action
    assert (await api.get_entity(alice.id)).name == "Alice Smith"


@pytest.mark.parametrize(
    "path",
    [
        "/entities?q=" + "x" * 501,
        "/entities?page=0",
        "/entities?page=abc",
        "/entities?page=99999999999",
        "/entities?page=7",
        "/entities/" + "x" * 300,
        "/entities/nope",
        "/entities/nope?depth=9",
        "/conversations/nope",
        "/users?user=" + "u" * 600,
    ],
)
async def test_hostile_reads_are_4xx_pages(ui: Browserless, path: str) -> None:
    page = await ui.get(path)
    assert 400 <= page.status_code < 500, (path, page.status_code)
    assert page.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize(
    ("action", "fields"),
    [
        ("nope", {}),
        ("delete-entity", {}),
        ("correct", {"entity_id": "nope", "name": "x", "type": "y"}),
        ("feedback", {"entity_id": "nope", "user_score": "7"}),
        ("merge", {"source_id": "a"}),
        ("correct", {"entity_id": "x", "name": "n" * 5000, "type": "t"}),
    ],
)
async def test_hostile_actions_are_4xx_pages(
    ui: Browserless, action: str, fields: dict[str, str]
) -> None:
    page = await ui.act(action, fields, confirm=True)
    assert 400 <= page.status_code < 500, (action, page.status_code, page.text)


async def test_hostile_form_bodies_are_4xx(ui: Browserless) -> None:
    too_many = "&".join(f"f{i}=1" for i in range(100))
    for body, kind in [
        (too_many, "application/x-www-form-urlencoded"),
        ("a=1&a=2", "application/x-www-form-urlencoded"),
        ('{"csrf": 1}', "application/json"),
        ("x=" + "y" * 70_000, "application/x-www-form-urlencoded"),
    ]:
        page = await ui.http.post(
            "/ui/actions/delete-entity", content=body, headers={"content-type": kind}
        )
        assert page.status_code == 400, (body[:40], page.status_code)


async def test_logout_ends_the_session(ui: Browserless) -> None:
    out = await ui.http.post("/ui/logout", data={"csrf": ui.csrf})
    assert out.status_code == 303
    assert 'name="token"' in (await ui.get("/entities")).text


async def test_no_ui_means_404(root: SQLiteBackend) -> None:
    app = create_app(root, ui=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as http,
    ):
        assert (await http.get("/ui/")).status_code == 404
        assert (await http.get("/ui/login")).status_code == 404


async def test_delete_a_message(ui: Browserless, api: HostedBackend, seeded: Seeded) -> None:
    before = await api.get_conversation(seeded.conversation_id)
    fields = {"conversation_id": seeded.conversation_id, "message_id": seeded.first_message_id}
    asked = await ui.act("delete-message", fields, confirm=False)
    assert "I work at Acme Corp" in asked.text and "Nothing has changed yet" in asked.text
    done = await ui.act("delete-message", fields, confirm=True)
    assert done.status_code == 200 and "What changed" in done.text
    messages = await api.list_messages(seeded.conversation_id)
    assert seeded.first_message_id not in [m.id for m in messages]
    after = await api.get_conversation(seeded.conversation_id)
    assert after.message_count == (before.message_count or 0) - 1
    found = await api.search_messages(seeded.conversation_id, "Acme Corp")
    assert seeded.first_message_id not in [m.id for m in found.items]
    # Entities learned from it stay: shared memory, deleted on their own page.
    assert "Alice Smith" in [e.name for e in await api.list_entities()]


async def test_revoking_the_key_ends_its_browser_session(http: httpx.AsyncClient) -> None:
    minted = await http.post(
        "/v1/auth/api-keys", json={"label": "browser"}, headers={"Authorization": "Bearer owner"}
    )
    assert minted.status_code == 201, minted.text
    key = minted.json()
    ui = await login(http, key["key"])
    assert "Log out" in (await ui.get("/entities")).text
    revoked = await http.delete(
        f"/v1/auth/api-keys/{key['id']}", headers={"Authorization": "Bearer owner"}
    )
    assert revoked.status_code == 200, revoked.text
    assert 'name="token"' in (await ui.get("/entities")).text
    refused = await ui.act("delete-entity", {"entity_id": "x"}, confirm=True)
    assert refused.status_code == 401
