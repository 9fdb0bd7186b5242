"""The inspector in a real headless Chromium against a real ``nams-local serve``.

Debian's ``/usr/bin/chromium`` (``.ci/run`` installs it), driven by playwright from PyPI
(its own browser download is never used). A person's path through the issue: log in, find
an entity, follow its provenance to the message, correct it, merge two, delete one, each
change checked through ``/v1``; stored script tags render as text and never run. The run
writes the screenshots ``docs/inspector.md`` shows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from backends.hosted import HostedBackend
from tests.server.processes import ServeProcess, serve_process

from .seed import XSS_ENTITY, XSS_MESSAGE, Seeded, seed

pytestmark = pytest.mark.xdist_group("browser")

CHROMIUM = Path("/usr/bin/chromium")
#: As root Chromium needs --no-sandbox; the rest keep it off the (closed) network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "inspector"
TOKEN = "inspector-browser-token"
TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium "
            "chromium-driver; .ci/run does) to run the inspector's browser tests"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServeProcess]:
    args = ["--port", "0", "--db", str(tmp_path / "ui.db"), "--no-embeddings"]
    args += ["--extraction", "sync"]
    with serve_process(args, tmp_path, stderr=tmp_path / "serve.log") as process:
        yield process
        assert process.stop() == 0


def _seed(base_url: str) -> Seeded:
    """Seed through the hosted client on a thread of its own: playwright's sync API keeps
    an event loop running on this one."""

    async def run() -> Seeded:
        async with HostedBackend(TOKEN, endpoint=f"{base_url}/v1", max_retries=0) as client:
            return await seed(client)

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run()).result(timeout=120)


@pytest.fixture
def page(browser: Browser, served: ServeProcess) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def _v1(served: ServeProcess) -> httpx.Client:
    return httpx.Client(
        base_url=f"{served.base_url}/v1",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )


def _entity_id(v1: httpx.Client, name: str) -> str | None:
    for entity in v1.get("/entities").json()["entities"]:
        if entity["name"] == name:
            return str(entity["id"])
    return None


def _shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _log_in(page: Page, served: ServeProcess) -> None:
    page.goto(f"{served.base_url}/ui/")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    _shot(page, "login")
    page.get_by_label("API key").fill(TOKEN)
    page.get_by_role("button", name="Open the inspector").click()
    expect(page.get_by_role("heading", name="What this memory holds")).to_be_visible()


def test_find_follow_correct_merge_delete(page: Page, served: ServeProcess) -> None:
    seeded = _seed(served.base_url)
    _log_in(page, served)
    _shot(page, "overview")

    # Find an entity.
    page.get_by_label("Find an entity").fill("Alice")
    page.get_by_role("button", name="Search").click()
    page.get_by_role("link", name="Alice Smith", exact=True).click()
    expect(page.locator("h1.entity-name")).to_contain_text("Alice Smith")
    expect(page.get_by_text("WORKS_AT").first).to_be_visible()
    _shot(page, "entity")

    # Follow provenance to the message it came from.
    page.locator("a.source").first.click()
    expect(page).to_have_url(
        f"{served.base_url}/ui/conversations/{seeded.conversation_id}#m-{seeded.first_message_id}"
    )
    expect(page.locator(f"#m-{seeded.first_message_id}")).to_contain_text("I work at Acme Corp")
    _shot(page, "conversation")

    with _v1(served) as v1:
        alice_id = _entity_id(v1, "Alice Smith")
        assert alice_id is not None

        # Correct it: confirm page first (nothing written), then the change.
        page.goto(f"{served.base_url}/ui/entities/{alice_id}")
        page.get_by_label("Name").fill("Alice Smith-Jones")
        page.get_by_label("Description").fill("Works at Acme Corp; moved to Potsdam")
        page.get_by_role("button", name="Correct…").click()
        expect(page.get_by_text("Nothing has changed yet")).to_be_visible()
        _shot(page, "confirm")
        assert v1.get(f"/entities/{alice_id}").json()["name"] == "Alice Smith"
        page.get_by_role("button", name="Yes, correct").click()
        expect(page.get_by_role("heading", name="What changed")).to_be_visible()
        _shot(page, "changed")
        corrected = v1.get(f"/entities/{alice_id}").json()
        assert corrected["name"] == "Alice Smith-Jones"
        assert corrected["description"] == "Works at Acme Corp; moved to Potsdam"

        # Merge the two near-duplicate organisations.
        corp_id = _entity_id(v1, "Acme Corporation")
        acme_id = _entity_id(v1, "Acme Corp")
        assert corp_id and acme_id
        page.goto(f"{served.base_url}/ui/entities/{corp_id}")
        page.get_by_label("Merge this into").select_option(acme_id)
        page.get_by_role("button", name="Merge…").click()
        expect(page.get_by_text("Nothing has changed yet")).to_be_visible()
        page.get_by_role("button", name="Yes, merge").click()
        expect(page.get_by_role("heading", name="What changed")).to_be_visible()
        assert _entity_id(v1, "Acme Corporation") is None
        merged = v1.get(f"/entities/{acme_id}").json()
        assert "SAME_AS" in {r["relType"] for r in merged["relationships"]}
        page.get_by_role("link", name="Open the merged entity").click()
        expect(page.get_by_text("was merged into this")).to_be_visible()
        _shot(page, "merged")

        # Delete one.
        bob_id = _entity_id(v1, "Bob Jones")
        assert bob_id is not None
        page.goto(f"{served.base_url}/ui/entities/{bob_id}")
        page.get_by_role("button", name="Delete this entity…").click()
        expect(page.get_by_text("Nothing has changed yet")).to_be_visible()
        page.get_by_role("button", name="Yes, delete").click()
        expect(page.get_by_role("heading", name="Deleted Bob Jones")).to_be_visible()
        assert _entity_id(v1, "Bob Jones") is None

    page.goto(f"{served.base_url}/ui/graph")
    expect(page.locator("svg.picture")).to_be_visible()
    _shot(page, "graph")
    # Click to move: a node of the picture opens its entity.
    page.locator("svg.picture a.node").filter(has_text="Berlin").click()
    expect(page.locator("h1.entity-name")).to_contain_text("Berlin")


def test_stored_script_tags_render_as_text(page: Page, served: ServeProcess) -> None:
    seeded = _seed(served.base_url)
    _log_in(page, served)
    title = page.title()
    page.goto(f"{served.base_url}/ui/conversations/{seeded.conversation_id}")
    expect(page.get_by_text(XSS_MESSAGE)).to_be_visible()
    page.goto(f"{served.base_url}/ui/entities/{seeded.xss_entity_id}")
    expect(page.locator("h1.entity-name")).to_contain_text(XSS_ENTITY)
    _shot(page, "escaped")
    page.goto(f"{served.base_url}/ui/entities?type=person")
    expect(page.get_by_role("link", name=XSS_ENTITY)).to_be_visible()
    ran = page.evaluate("() => [window.__xssMessage, window.__xssEntity]")
    assert ran == [None, None]
    assert "pwned" not in page.title() and page.title() != title.replace("Overview", "pwned")
