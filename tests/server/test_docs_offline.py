"""``/docs`` and ``/redoc`` load entirely from this server: no CDN, no external URL."""

from __future__ import annotations

import re

import httpx
import pytest

ASSET = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\(["']?([^"')]+)""")


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_page_and_its_assets_come_from_the_server(http: httpx.AsyncClient, page: str) -> None:
    response = await http.get(page)  # no token: like /openapi.json (A1)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", html, re.IGNORECASE), html
    assets = [a or b for a, b in ASSET.findall(html)]
    scripts = [a for a in assets if a.endswith(".js")]
    assert scripts and all(a.startswith("/docs/assets/") for a in assets), assets
    for asset in assets:
        loaded = await http.get(asset)
        assert loaded.status_code == 200, asset
        assert len(loaded.content) > 1000 or asset.endswith(".png"), asset
    assert "/openapi.json" in html
    assert (await http.get("/openapi.json")).status_code == 200


async def test_swagger_ui_is_version_5(http: httpx.AsyncClient) -> None:
    """OpenAPI 3.1 (what FastAPI publishes) needs Swagger UI 5; 4.x cannot render it."""
    bundle = (await http.get("/docs/assets/swagger-ui-bundle.js")).text

    assert re.search(r'"5\.\d+\.\d+"', bundle)


async def test_unknown_asset_is_404(http: httpx.AsyncClient) -> None:
    assert (await http.get("/docs/assets/nothing.js")).status_code == 404
